/*
 * ruv_descriptor_poll() as a C client library's adapter would use it: the program owns a
 * socketpair, watches its end for readiness, and does its own reads in the callback.
 * Prints what it saw, one line per event, then "ok". EmbedDescriptorPollTests.swift builds
 * and runs it. Every wait is bounded; a failed CHECK prints "FAIL ..." and exits 1.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "reactiveuv.h"
#include "check.h"


static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Drives the runtime's own loop from a poll(2) loop until *counter reaches target. */
static void run_until(ruv_runtime_t *rt, const int *counter, int target) {
    double until = now_seconds() + 20;
    while (*counter < target) {
        CHECK(now_seconds() < until);
        struct pollfd pfd = {.fd = ruv_runtime_backend_fd(rt), .events = POLLIN};
        int timeout = ruv_runtime_backend_timeout(rt);
        if (timeout < 0 || timeout > 100) timeout = 100;
        CHECK(poll(&pfd, 1, timeout) >= 0);
        CHECK(ruv_runtime_run_once(rt) >= 0);
    }
}

static int fds[2];
static int reads_done, errors, completions;

/* The library's "process input": read what is there. */
static void on_ready(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    char mask[16] = {0};
    memcpy(mask, bytes, len < 15 ? len : 15);
    char buffer[64];
    ssize_t n = recv(fds[0], buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) {
        printf("ready %s read %.*s\n", mask, (int)n, buffer);
        reads_done++;
    }
}
static void on_error(int code, const char *message, void *ctx) {
    (void)message;
    printf("%s error %s\n", (const char *)ctx, ruv_err_name(code));
    errors++;
}
static void on_completed(void *ctx) {
    (void)ctx;
    completions++;
}

int main(void) {
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    ruv_runtime_t *rt = NULL;
    CHECK_EQ(ruv_runtime_create(NULL, &rt), 0);

    ruv_signal_t *readable = NULL, *bad = NULL;
    CHECK_EQ(ruv_descriptor_poll(rt, fds[0], 0, &readable), RUV_EARGUMENT);
    CHECK_EQ(ruv_descriptor_poll(rt, fds[0], 64, &readable), RUV_EARGUMENT);
    CHECK_EQ(ruv_descriptor_poll(NULL, fds[0], RUV_POLL_READABLE, &readable), UV_EINVAL);
    CHECK_EQ(ruv_descriptor_poll(rt, fds[0], RUV_POLL_READABLE, &readable), 0);

    ruv_subscription_t *sub = NULL;
    CHECK_EQ(ruv_signal_subscribe(readable, on_ready, on_error, on_completed, "readable", &sub), 0);
    const char *words[] = {"alpha", "beta"};
    for (int i = 0; i < 2; i++) {
        CHECK(send(fds[1], words[i], strlen(words[i]), 0) == (ssize_t)strlen(words[i]));
        run_until(rt, &reads_done, i + 1);
    }
    CHECK_EQ(ruv_subscription_dispose(sub), 0);
    ruv_subscription_release(sub);

    /* A descriptor that is not open: the subscription fails with EBADF. */
    int closed_fd = dup(fds[1]);
    close(closed_fd);
    CHECK_EQ(ruv_descriptor_poll(rt, closed_fd, RUV_POLL_READABLE, &bad), 0);
    CHECK_EQ(ruv_signal_subscribe(bad, on_ready, on_error, on_completed, "closed", NULL), 0);
    run_until(rt, &errors, 1);

    ruv_signal_release(readable);
    ruv_signal_release(bad);
    CHECK_EQ(ruv_runtime_close(rt), 0);
    ruv_runtime_release(rt);
    close(fds[0]);
    close(fds[1]);
    printf("completions %d\nok\n", completions);
    return 0;
}

/*
 * The rotation order guarantee, as a C program sees it (issue 32):
 * `tail-order <dir> inotify|poll <rounds>` follows <dir>/rot.log with ruv_file_tail on the
 * runtime's own loop, driven through ruv_runtime_backend_fd like a foreign poll loop,
 * while a writer thread rotates faster than the reader reads: each round it creates a
 * file, writes all its lines in one write(), renames it to .1 (older ones to .2, .3), three
 * times in quick succession. Every line carries a sequence number and each file is complete
 * before the next exists, so the only correct delivery is every number once, in order.
 * Prints "delivered N" and "ok"; a line out of order prints "FAIL ..." and exits 1.
 * EmbedTailOrderTests.swift builds and runs it. Every wait is bounded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reactiveuv.h"
#include "check.h"


static char path[4096];
static int rounds;
static atomic_int delivered;   /* lines delivered, in order (the loop thread counts) */
static atomic_int written;     /* lines written (the writer counts) */
static atomic_int writer_done; /* 1: finished, 2: failed */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_line(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    char text[64];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
    memcpy(text, bytes, n);
    text[n] = '\0';
    int expected = atomic_load(&delivered);
    int got = atoi(text);
    if (got != expected) {
        printf("FAIL order: line %d delivered where %d belongs\n", got, expected);
        fflush(stdout);
        exit(1);
    }
    atomic_store(&delivered, expected + 1);
}

static void on_error(int code, const char *message, void *ctx) {
    (void)ctx;
    printf("FAIL tail error %s: %s\n", ruv_err_name(code), message);
    fflush(stdout);
    exit(1);
}

static void on_completed(void *ctx) {
    (void)ctx;
    printf("FAIL tail completed\n");
    fflush(stdout);
    exit(1);
}

/* One file's lines, numbers [first, first + count), each a few dozen bytes. */
static char *lines_of(int first, int count, size_t *len) {
    size_t cap = (size_t)count * 80 + 1, used = 0;
    char *buffer = malloc(cap);
    CHECK(buffer != NULL);
    for (int i = first; i < first + count; i++) {
        int pad = 10 + i % 50;
        used += (size_t)snprintf(buffer + used, cap - used, "%d %.*s\n", i, pad,
                                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    }
    *len = used;
    return buffer;
}

static int wait_delivered(int count) {
    double until = now_seconds() + 120;
    while (atomic_load(&delivered) < count) {
        if (now_seconds() > until) return 0;
        usleep(2000);
    }
    return 1;
}

static void *writer(void *arg) {
    (void)arg;
    char from[4200], to[4200];
    unsigned seed = (unsigned)getpid();
    for (int round = 0; round < rounds; round++) {
        if (!wait_delivered(atomic_load(&written))) {
            printf("FAIL round %d: %d of %d lines delivered\n", round, atomic_load(&delivered), atomic_load(&written));
            atomic_store(&writer_done, 2);
            return NULL;
        }
        for (int k = 1; k <= 3; k++) {
            snprintf(from, sizeof from, "%s.%d", path, k);
            unlink(from);
        }
        for (int k = 0; k < 3; k++) {
            for (int j = 2; j >= 1; j--) {
                snprintf(from, sizeof from, "%s.%d", path, j);
                snprintf(to, sizeof to, "%s.%d", path, j + 1);
                rename(from, to);
            }
            snprintf(to, sizeof to, "%s.1", path);
            CHECK(rename(path, to) == 0);
            /* Created, then written in one write(): a reader may open it still empty. */
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            CHECK(fd >= 0);
            int count = 1 + (int)(rand_r(&seed) % 2000);
            size_t len = 0;
            char *text = lines_of(atomic_load(&written), count, &len);
            CHECK(write(fd, text, len) == (ssize_t)len);
            free(text);
            close(fd);
            atomic_fetch_add(&written, count);
        }
    }
    atomic_store(&writer_done, 1);
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 4);
    snprintf(path, sizeof path, "%s/rot.log", argv[1]);
    unsigned flags = strcmp(argv[2], "poll") == 0 ? RUV_TAIL_POLL : 0;
    rounds = atoi(argv[3]);
    CHECK(rounds > 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    close(fd);

    ruv_runtime_t *rt = NULL;
    CHECK(ruv_runtime_create(NULL, &rt) == 0);
    ruv_signal_t *tail = NULL;
    CHECK(ruv_file_tail_ex(rt, path, 0, 0, flags, &tail) == 0);
    ruv_subscription_t *subscription = NULL;
    CHECK(ruv_signal_subscribe(tail, on_line, on_error, on_completed, NULL, &subscription) == 0);

    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, writer, NULL) == 0);
    double until = now_seconds() + 300;
    while (atomic_load(&writer_done) == 0 || atomic_load(&delivered) < atomic_load(&written)) {
        CHECK(atomic_load(&writer_done) != 2);
        CHECK(now_seconds() < until);
        struct pollfd pfd = {.fd = ruv_runtime_backend_fd(rt), .events = POLLIN};
        int timeout = ruv_runtime_backend_timeout(rt);
        if (timeout < 0 || timeout > 100) timeout = 100;
        CHECK(poll(&pfd, 1, timeout) >= 0);
        CHECK(ruv_runtime_run_once(rt) >= 0);
    }
    pthread_join(thread, NULL);
    /* A few more turns: nothing may follow (no line twice). */
    double settle = now_seconds() + 0.3;
    while (now_seconds() < settle) {
        struct pollfd pfd = {.fd = ruv_runtime_backend_fd(rt), .events = POLLIN};
        CHECK(poll(&pfd, 1, 20) >= 0);
        CHECK(ruv_runtime_run_once(rt) >= 0);
    }
    CHECK(atomic_load(&delivered) == atomic_load(&written));
    printf("delivered %d\n", atomic_load(&delivered));
    CHECK(ruv_subscription_dispose(subscription) == 0);
    ruv_subscription_release(subscription);
    ruv_signal_release(tail);
    CHECK(ruv_runtime_close(rt) == 0);
    ruv_runtime_release(rt);
    printf("ok\n");
    return 0;
}

/*
 * poll-host: a C program with a poll() loop of its own that hosts ReactiveUV.
 *
 * The runtime runs on a libuv loop of its own, which this program never runs with uv_run:
 * it waits on the runtime's backend file descriptor in its own poll() call, with the
 * timeout the runtime asks for, and calls ruv_runtime_run_once() after each wake-up. Beside
 * it the program keeps a timer of its own (the poll timeout, nothing of libuv's), and
 * ReactiveUV serves a TCP echo server built from signals: every accepted connection's
 * reads are sent back to it (ruv_connection_send of ruv_connection_reads). SIGINT and
 * SIGTERM arrive as a ReactiveUV signal and end the loop cleanly.
 *
 *   poll-host [-H host] [-p port] [-t timer_ms] [-s seconds] [-v]
 *
 * Prints "listening on HOST:PORT" once, "host timer N" on each tick of its own timer,
 * "connection from PEER" and "connection closed" with -v, and "bye" after a clean exit.
 *
 * Build (see README.md):
 *   cc -std=c11 -Wall -Wextra -I<include dir> poll-host.c -L<lib dir> -lreactiveuv \
 *      -Wl,-rpath,<lib dir> -o poll-host
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reactiveuv.h"

struct host {
    ruv_runtime_t *runtime;
    int verbose;
    int stop;            /* set by the unix-signal subscription */
    int failed;          /* the server could not start */
    long connections;    /* open echo connections */
};

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the echo server, built from ReactiveUV signals -------------------------------- */

static void on_listening(const char *host, int port, void *ctx) {
    (void)ctx;
    printf("listening on %s:%d\n", host, port);
    fflush(stdout);
}

static void on_server_error(int code, const char *message, void *ctx) {
    struct host *h = ctx;
    fprintf(stderr, "poll-host: cannot serve: %s: %s\n", ruv_err_name(code), message);
    h->failed = 1;
}

static void on_echo_error(int code, const char *message, void *ctx) {
    struct host *h = ctx;
    /* A peer that resets its connection is that connection's business, not the server's. */
    if (h->verbose) printf("connection error %s (%s)\n", ruv_err_name(code), message);
    h->connections--;
}

static void on_echo_done(void *ctx) {
    struct host *h = ctx;
    if (h->verbose) printf("connection closed\n");
    h->connections--;
}

/* Each connection echoes: its reads, sent back to it; shut down when the peer has finished. */
static void on_connection(ruv_connection_t *connection, void *ctx) {
    struct host *h = ctx;
    if (h->verbose) {
        char peer[128];
        if (ruv_connection_peer(connection, peer, sizeof peer) >= 0) printf("connection from %s\n", peer);
    }
    ruv_signal_t *reads = NULL;
    int rc = ruv_connection_reads(connection, &reads);
    if (rc == 0) rc = ruv_connection_send(connection, reads, 1, on_echo_error, on_echo_done, h, NULL);
    if (rc == 0) h->connections++;
    else fprintf(stderr, "poll-host: echo: %s\n", ruv_strerror(rc));
    ruv_signal_release(reads);
    ruv_connection_release(connection); /* the server's subscription owns the socket */
}

static void on_unix_signal(const void *bytes, size_t len, void *ctx) {
    struct host *h = ctx;
    int signum = 0;
    if (len == sizeof signum) memcpy(&signum, bytes, sizeof signum); /* the number, as an int */
    printf("signal %d\n", signum);
    h->stop = 1;
}

int main(int argc, char **argv) {
    const char *bind_host = "127.0.0.1";
    int port = 7070, timer_ms = 1000, seconds = 0, opt;
    struct host h = {0};
    while ((opt = getopt(argc, argv, "H:p:t:s:v")) != -1) {
        switch (opt) {
        case 'H': bind_host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 't': timer_ms = atoi(optarg); break;
        case 's': seconds = atoi(optarg); break;
        case 'v': h.verbose = 1; break;
        default:
            fprintf(stderr, "usage: %s [-H host] [-p port] [-t timer_ms] [-s seconds] [-v]\n", argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (timer_ms <= 0) timer_ms = 1000;

    /* NULL: the runtime gets a loop of its own, which we drive from our poll() below. */
    int rc = ruv_runtime_create(NULL, &h.runtime);
    if (rc < 0) {
        fprintf(stderr, "poll-host: ruv_runtime_create: %s\n", ruv_strerror(rc));
        return 1;
    }

    ruv_subscription_t *server = NULL, *sigint = NULL, *sigterm = NULL;
    rc = ruv_tcp_listen(h.runtime, bind_host, port, on_listening, on_connection, on_server_error, &h, &server);
    if (rc < 0) {
        fprintf(stderr, "poll-host: ruv_tcp_listen: %s\n", ruv_strerror(rc));
        return 1;
    }
    ruv_signal_t *s = NULL;
    if (ruv_unix_signal_watch(h.runtime, SIGINT, &s) == 0) {
        ruv_signal_subscribe(s, on_unix_signal, NULL, NULL, &h, &sigint);
        ruv_signal_release(s);
    }
    if (ruv_unix_signal_watch(h.runtime, SIGTERM, &s) == 0) {
        ruv_signal_subscribe(s, on_unix_signal, NULL, NULL, &h, &sigterm);
        ruv_signal_release(s);
    }

    /* The host's own loop: one descriptor (the runtime's) and one timer of our own. */
    struct pollfd fds[1] = {{.fd = ruv_runtime_backend_fd(h.runtime), .events = POLLIN}};
    long long start = now_ms(), next_tick = start + timer_ms;
    long ticks = 0;
    while (!h.stop && !h.failed) {
        long long now = now_ms();
        if (seconds > 0 && now - start >= (long long)seconds * 1000) break;
        int wait = (int)(next_tick > now ? next_tick - now : 0);
        int runtime_wait = ruv_runtime_backend_timeout(h.runtime);
        if (runtime_wait >= 0 && runtime_wait < wait) wait = runtime_wait;
        if (poll(fds, 1, wait) < 0 && errno != EINTR) break;
        if (now_ms() >= next_tick) {
            printf("host timer %ld\n", ++ticks);
            next_tick += timer_ms;
        }
        ruv_runtime_run_once(h.runtime);
    }

    ruv_subscription_dispose(server); /* stops listening and closes open connections */
    ruv_subscription_release(server);
    ruv_subscription_dispose(sigint);
    ruv_subscription_release(sigint);
    ruv_subscription_dispose(sigterm);
    ruv_subscription_release(sigterm);
    rc = ruv_runtime_close(h.runtime); /* runs the loop until every handle has closed */
    ruv_runtime_release(h.runtime);
    if (rc < 0) {
        fprintf(stderr, "poll-host: ruv_runtime_close: %s\n", ruv_strerror(rc));
        return 1;
    }
    printf("bye\n");
    return h.failed ? 1 : 0;
}

/*
 * tail-grep: `tail -F FILE | grep PATTERN`, throttled, from a C program that owns its libuv
 * loop and hosts ReactiveUV on it.
 *
 * The program creates its own uv_loop_t and runs it with uv_run; ReactiveUV's runtime lives
 * on that loop (ruv_runtime_create(&loop, ...)). The pipeline is built from signals:
 *
 *   ruv_file_tail(FILE)                 every line appended (tail -F: truncation, rotation)
 *     -> ruv_signal_filter(contains)    a C predicate: lines containing PATTERN
 *     -> ruv_signal_throttle(SECONDS)   RAC's throttle: a burst of matches prints its last
 *     -> ruv_signal_take(COUNT)         optional: stop after COUNT lines
 *
 * and each line that comes out is printed. SIGINT/SIGTERM (as ReactiveUV signals) end it.
 *
 *   tail-grep [-t seconds] [-n start_lines] [-c count] PATTERN FILE
 *
 *   -t  throttle interval in seconds (default 0.2; 0 prints every match)
 *   -n  first print the matches among the file's last N lines (default 0: new lines only)
 *   -c  exit after printing COUNT lines
 *
 * Build (see README.md):
 *   cc -std=c11 -Wall -Wextra -I<include dir> tail-grep.c -L<lib dir> -lreactiveuv -luv \
 *      -Wl,-rpath,<lib dir> -o tail-grep
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "reactiveuv.h"

struct grep {
    uv_loop_t *loop;
    const char *pattern;
    size_t pattern_len;
    ruv_subscription_t *lines;   /* the pipeline's subscription */
    ruv_subscription_t *signals[2];
    int status;
};

/* The C predicate: does the line contain the pattern? */
static int contains_pattern(const void *bytes, size_t len, void *ctx) {
    struct grep *g = ctx;
    return memmem(bytes, len, g->pattern, g->pattern_len) != NULL;
}

static void print_line(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    fwrite(bytes, 1, len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

/* Ends the program: uv_run returns once nothing of ours is left on the loop. Callbacks may
   dispose subscriptions; closing the runtime waits until uv_run has returned. */
static void finish(struct grep *g) {
    ruv_subscription_dispose(g->lines);
    ruv_subscription_dispose(g->signals[0]);
    ruv_subscription_dispose(g->signals[1]);
    uv_stop(g->loop);
}

static void on_error(int code, const char *message, void *ctx) {
    struct grep *g = ctx;
    fprintf(stderr, "tail-grep: %s: %s\n", ruv_err_name(code), message);
    g->status = 1;
    finish(g);
}

static void on_completed(void *ctx) { finish(ctx); }

static void on_signal(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len;
    finish(ctx);
}

int main(int argc, char **argv) {
    double throttle = 0.2;
    size_t start_lines = 0, count = 0;
    int opt;
    while ((opt = getopt(argc, argv, "t:n:c:")) != -1) {
        switch (opt) {
        case 't': throttle = atof(optarg); break;
        case 'n': start_lines = (size_t)atol(optarg); break;
        case 'c': count = (size_t)atol(optarg); break;
        default: goto usage;
        }
    }
    if (argc - optind != 2) {
    usage:
        fprintf(stderr, "usage: %s [-t seconds] [-n start_lines] [-c count] PATTERN FILE\n", argv[0]);
        return 2;
    }
    struct grep g = {.pattern = argv[optind], .pattern_len = strlen(argv[optind])};
    const char *path = argv[optind + 1];

    /* Our loop; ReactiveUV joins it. */
    uv_loop_t loop;
    uv_loop_init(&loop);
    g.loop = &loop;
    ruv_runtime_t *rt = NULL;
    int rc = ruv_runtime_create(&loop, &rt);
    if (rc < 0) {
        fprintf(stderr, "tail-grep: %s\n", ruv_strerror(rc));
        return 1;
    }

    /* tail -F FILE | filter | throttle | take, released as soon as it is built: the
       subscription keeps what it needs. */
    ruv_signal_t *tail = NULL, *matches = NULL, *throttled = NULL, *limited = NULL, *out;
    rc = ruv_file_tail(rt, path, start_lines, &tail);
    if (rc == 0) rc = ruv_signal_filter(tail, contains_pattern, &g, &matches);
    out = matches;
    if (rc == 0 && throttle > 0) {
        rc = ruv_signal_throttle(matches, rt, throttle, &throttled);
        out = throttled;
    }
    if (rc == 0 && count > 0) {
        rc = ruv_signal_take(out, count, &limited);
        out = limited;
    }
    if (rc == 0) rc = ruv_signal_subscribe(out, print_line, on_error, on_completed, &g, &g.lines);
    ruv_signal_release(tail);
    ruv_signal_release(matches);
    ruv_signal_release(throttled);
    ruv_signal_release(limited);
    if (rc < 0) {
        fprintf(stderr, "tail-grep: %s\n", ruv_strerror(rc));
        return 1;
    }

    int signums[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        ruv_signal_t *s = NULL;
        if (ruv_unix_signal_watch(rt, signums[i], &s) == 0) {
            ruv_signal_subscribe(s, on_signal, NULL, NULL, &g, &g.signals[i]);
            ruv_signal_release(s);
        }
    }

    /* The host runs its loop. ReactiveUV's file watch and timers keep it alive. */
    uv_run(&loop, UV_RUN_DEFAULT);

    ruv_subscription_release(g.lines);
    ruv_subscription_release(g.signals[0]);
    ruv_subscription_release(g.signals[1]);
    rc = ruv_runtime_close(rt);
    ruv_runtime_release(rt);
    uv_run(&loop, UV_RUN_DEFAULT); /* lets ReactiveUV's handles finish closing */
    if (rc == 0) rc = uv_loop_close(&loop);
    if (rc < 0) {
        fprintf(stderr, "tail-grep: closing: %s\n", ruv_strerror(rc));
        return 1;
    }
    return g.status;
}

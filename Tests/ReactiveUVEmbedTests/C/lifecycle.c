/*
 * Creates and releases every kind of object many times (`lifecycle <kind> <count>`), then
 * checks that memory did not grow. EmbedLeakTests builds it with -fsanitize=leak, so that
 * LeakSanitizer also reports anything unreachable at exit (exit code 23).
 *
 * It prints the resident set size after a warm-up tenth of the iterations and at the end,
 * as "rss <kind> <warm KiB> <end KiB>"; the test bounds the difference.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "reactiveuv.h"
#include "check.h"

#define OK(expr) CHECK((expr) == 0)

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    CHECK(f != NULL);
    CHECK(fscanf(f, "%ld %ld", &pages, &resident) == 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int keep(const void *bytes, size_t len, void *ctx) { (void)bytes, (void)ctx; return len > 0; }
static int copy(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx) {
    (void)ctx;
    return ruv_buffer_append(out, bytes, len);
}
static ruv_signal_t *inner(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    ruv_signal_t *s = NULL;
    OK(ruv_signal_return(bytes, len, &s));
    return s;
}
static long delivered;
static void on_next(const void *bytes, size_t len, void *ctx) { (void)bytes, (void)ctx; delivered += (long)len; }
static void on_error(int code, const char *message, void *ctx) { (void)code, (void)message, (void)ctx; }
static void on_done(void *ctx) { (void)ctx; }

/* Shared objects the per-iteration work builds on. */
static ruv_runtime_t *rt;
static ruv_subject_t *subject;
static ruv_signal_t *subject_signal;

/* The echo server the "tcp" kind connects to, started on first use. */
static int tcp_port;
static ruv_subscription_t *tcp_server;
static void tcp_listening(const char *host, int port, void *ctx) { (void)host, (void)ctx; tcp_port = port; }
static void tcp_echo(ruv_connection_t *c, void *ctx) {
    (void)ctx;
    ruv_signal_t *reads = NULL;
    OK(ruv_connection_reads(c, &reads));
    OK(ruv_connection_send(c, reads, 1, NULL, NULL, NULL, NULL));
    ruv_signal_release(reads);
    ruv_connection_release(c);
}
static void tcp_connected(ruv_connection_t *c, void *ctx) {
    (void)ctx;
    ruv_signal_t *reads = NULL, *hello = NULL;
    OK(ruv_connection_reads(c, &reads));
    OK(ruv_signal_subscribe(reads, on_next, on_error, on_done, NULL, NULL));
    OK(ruv_signal_return("hello", 5, &hello));
    OK(ruv_connection_send(c, hello, 1, NULL, NULL, NULL, NULL));
    ruv_signal_release(reads);
    ruv_signal_release(hello);
    ruv_connection_release(c);
}

/* One iteration of `kind`. */
static void iterate(const char *kind, long i) {
    if (strcmp(kind, "all") == 0) {
        static const char *const kinds[] = {"runtime", "host-runtime", "subject", "signal", "subscription",
                                            "timer-subscription", "file-subscription", "tcp"};
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) iterate(kinds[k], i);
    } else if (strcmp(kind, "runtime") == 0) {
        ruv_runtime_t *r = NULL;
        OK(ruv_runtime_create(NULL, &r));
        OK(ruv_runtime_close(r));
        ruv_runtime_release(r);
    } else if (strcmp(kind, "host-runtime") == 0) {
        uv_loop_t loop;
        OK(uv_loop_init(&loop));
        ruv_runtime_t *r = NULL;
        OK(ruv_runtime_create(&loop, &r));
        OK(ruv_runtime_close(r));
        ruv_runtime_release(r);
        OK(uv_run(&loop, UV_RUN_DEFAULT));
        OK(uv_loop_close(&loop));
    } else if (strcmp(kind, "subject") == 0) {
        ruv_subject_t *s = NULL;
        ruv_signal_t *sig = NULL;
        OK(ruv_subject_create((size_t)(i % 3), &s));
        OK(ruv_subject_signal(s, &sig));
        OK(ruv_subject_send_next(s, "v", 1));
        if (i % 2) OK(ruv_subject_send_completed(s));
        ruv_signal_release(sig);
        ruv_subject_release(s);
    } else if (strcmp(kind, "signal") == 0) {
        /* Every constructor and operator, each result released. */
        ruv_signal_t *r = NULL, *o = NULL;
        OK(ruv_signal_return("abc", 3, &r));
#define REL(call) do { OK(call); ruv_signal_release(o); o = NULL; } while (0)
        REL(ruv_signal_empty(&o));
        REL(ruv_signal_never(&o));
        REL(ruv_signal_error(UV_EPIPE, "x", &o));
        REL(ruv_signal_interval(rt, 1, &o));
        REL(ruv_signal_timer(rt, 1, &o));
        REL(ruv_file_tail(rt, "/nonexistent/file", 0, &o));
        REL(ruv_file_lines(rt, "/nonexistent/file", &o));
        REL(ruv_file_read(rt, "/nonexistent/file", &o));
        REL(ruv_unix_signal_watch(rt, SIGUSR2, &o));
        REL(ruv_signal_filter(r, keep, NULL, &o));
        REL(ruv_signal_map(r, copy, NULL, &o));
        REL(ruv_signal_take(r, 1, &o));
        REL(ruv_signal_skip(r, 1, &o));
        REL(ruv_signal_distinct_until_changed(r, &o));
        REL(ruv_signal_throttle(r, rt, 1, &o));
        REL(ruv_signal_debounce(r, rt, 1, &o));
        REL(ruv_signal_timeout(r, rt, 1, &o));
        REL(ruv_signal_delay(r, rt, 1, &o));
        REL(ruv_signal_deliver_on(r, rt, &o));
        REL(ruv_signal_merge(r, r, &o));
        ruv_signal_t *list[] = {r, r, r};
        REL(ruv_signal_merge_many(list, 3, &o));
        REL(ruv_signal_concat(r, r, &o));
        REL(ruv_signal_flatten_map(r, inner, NULL, &o));
        REL(ruv_signal_switch_to_latest(r, inner, NULL, &o));
        REL(ruv_signal_retry(r, 1, &o));
        REL(ruv_signal_catch_to(r, r, &o));
        REL(ruv_signal_take_until(r, r, &o));
        REL(ruv_signal_start_with(r, "s", 1, &o));
        REL(ruv_signal_lines(r, 0, &o));
        ruv_signal_release(r);
    } else if (strcmp(kind, "subscription") == 0) {
        /* Subscriptions that end every way: disposed, completed, failed; through the
           operators that keep per-subscription state (map's buffer, merge, switch, retry),
           every tenth iteration. */
        ruv_subscription_t *sub = NULL;
        OK(ruv_signal_subscribe(subject_signal, on_next, on_error, on_done, NULL, &sub));
        OK(ruv_subject_send_next(subject, "v", 1));
        OK(ruv_subscription_dispose(sub));
        ruv_subscription_release(sub);
        if (i % 10 != 0) return; /* the pipeline below is ten objects: every tenth time */

        ruv_signal_t *r = NULL, *e = NULL, *m = NULL, *f = NULL, *c = NULL, *x = NULL, *t = NULL;
        OK(ruv_signal_return("abc\nd", 5, &r));
        OK(ruv_signal_error(UV_EPIPE, NULL, &e));
        OK(ruv_signal_map(r, copy, NULL, &m));
        OK(ruv_signal_flatten_map(m, inner, NULL, &f));
        OK(ruv_signal_concat(f, e, &c));
        OK(ruv_signal_retry(c, 2, &x));
        OK(ruv_signal_lines(x, 0, &t));
        OK(ruv_signal_subscribe(t, on_next, on_error, on_done, NULL, &sub));
        CHECK(ruv_subscription_is_disposed(sub) == 1);
        ruv_subscription_release(sub);
        ruv_signal_t *w = NULL;
        OK(ruv_signal_switch_to_latest(r, inner, NULL, &w));
        OK(ruv_signal_subscribe(w, on_next, on_error, on_done, NULL, NULL));
        ruv_signal_release(w);
        ruv_signal_release(r);
        ruv_signal_release(e);
        ruv_signal_release(m);
        ruv_signal_release(f);
        ruv_signal_release(c);
        ruv_signal_release(x);
        ruv_signal_release(t);
    } else if (strcmp(kind, "file-subscription") == 0) {
        /* Loop sources with libuv requests and handles: a file read to its end (an fs
           request per step), a missing file's error, and a unix-signal watch. */
        ruv_signal_t *lines = NULL, *watch = NULL;
        ruv_subscription_t *sub = NULL;
        OK(ruv_file_lines(rt, (i % 2) ? "/proc/self/stat" : "/nonexistent/file", &lines));
        OK(ruv_signal_subscribe(lines, on_next, on_error, on_done, NULL, &sub));
        while (ruv_subscription_is_disposed(sub) == 0) CHECK(ruv_runtime_run_once(rt) >= 0);
        ruv_subscription_release(sub);
        OK(ruv_unix_signal_watch(rt, SIGUSR2, &watch));
        OK(ruv_signal_subscribe(watch, on_next, on_error, on_done, NULL, &sub));
        OK(ruv_subscription_dispose(sub));
        ruv_subscription_release(sub);
        ruv_signal_release(lines);
        ruv_signal_release(watch);
        if (i % 64 == 0) CHECK(ruv_runtime_run_once(rt) >= 0);
    } else if (strcmp(kind, "tcp") == 0) {
        /* A connection to our own echo server: both sides' connection handles, reads and
           sends, the connect subscription ending when the connection has closed. */
        if (tcp_server == NULL) {
            OK(ruv_tcp_listen(rt, "127.0.0.1", 0, tcp_listening, tcp_echo, on_error, NULL, &tcp_server));
            while (tcp_port == 0) CHECK(ruv_runtime_run_once(rt) >= 0);
        }
        ruv_subscription_t *client = NULL;
        OK(ruv_tcp_connect(rt, "127.0.0.1", tcp_port, tcp_connected, on_error, on_done, NULL, &client));
        while (ruv_subscription_is_disposed(client) == 0) CHECK(ruv_runtime_run_once(rt) >= 0);
        ruv_subscription_release(client);
    } else if (strcmp(kind, "timer-subscription") == 0) {
        /* A loop source: the uv_timer_t is created at subscribe and closed at dispose; its
           memory goes in the close callback, on a later loop iteration. */
        ruv_signal_t *iv = NULL;
        ruv_subscription_t *sub = NULL;
        OK(ruv_signal_interval(rt, 10, &iv));
        OK(ruv_signal_subscribe(iv, on_next, on_error, on_done, NULL, &sub));
        OK(ruv_subscription_dispose(sub));
        ruv_subscription_release(sub);
        ruv_signal_release(iv);
        if (i % 64 == 0) CHECK(ruv_runtime_run_once(rt) >= 0);
    } else {
        printf("unknown kind %s\n", kind);
        exit(2);
    }
}

/* Lets pending close callbacks run: until nothing keeps the loop alive, or a bounded number
   of iterations while something does (the tcp kind's server listens throughout). */
static void settle(void) {
    for (int i = 0; i < 1000 && ruv_runtime_run_once(rt) > 0; i++) {}
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK(argc == 3);
    const char *kind = argv[1];
    long count = atol(argv[2]);
    OK(ruv_runtime_create(NULL, &rt));
    OK(ruv_subject_create(0, &subject));
    OK(ruv_subject_signal(subject, &subject_signal));

    long warm = count / 10, warm_rss = 0;
    for (long i = 0; i < count; i++) {
        iterate(kind, i);
        if (i + 1 == warm) {
            settle();
            warm_rss = rss_kib();
        }
    }
    settle();
    printf("rss %s %ld %ld\n", kind, warm_rss, rss_kib());

    if (tcp_server) {
        OK(ruv_subscription_dispose(tcp_server));
        ruv_subscription_release(tcp_server);
        settle();
    }
    ruv_signal_release(subject_signal);
    ruv_subject_release(subject);
    OK(ruv_runtime_close(rt));
    ruv_runtime_release(rt);
    printf("ok\n");
    return 0;
}

/*
 * The C API's behaviour, as a C program sees it: `api-tests <case>` runs one case and
 * prints the events it recorded, one per line, then "ok". EmbedAPITests.swift builds this
 * file against reactiveuv.h and libreactiveuv.so, runs each case and compares the lines.
 * A failed CHECK prints "FAIL ..." and exits 1. Every wait is bounded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "reactiveuv.h"
#include "check.h"


/* ---- recording -------------------------------------------------------------------- */

/* A recorder prints every event with its label; a subscription's ctx is its label. */
static void rec_next(const void *bytes, size_t len, void *ctx) {
    printf("%s next %.*s\n", (const char *)ctx, (int)len, (const char *)bytes);
}
static void rec_error(int code, const char *message, void *ctx) {
    printf("%s error %s\n", (const char *)ctx, ruv_err_name(code));
    CHECK(message != NULL && message[0] != '\0');
}
static void rec_completed(void *ctx) { printf("%s completed\n", (const char *)ctx); }

static void subscribe_rec(ruv_signal_t *signal, const char *label) {
    CHECK_RC(ruv_signal_subscribe(signal, rec_next, rec_error, rec_completed, (void *)label, NULL));
}

static void push(ruv_subject_t *subject, const char *text) {
    CHECK_RC(ruv_subject_send_next(subject, text, strlen(text)));
}

static ruv_signal_t *just(const char *text) {
    ruv_signal_t *s = NULL;
    CHECK_RC(ruv_signal_return(text, strlen(text), &s));
    return s;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Drives an own-loop runtime as a foreign poll loop would: waits on the backend fd for
   as long as the runtime allows (capped by the time left), then runs one iteration. */
static void poll_once(ruv_runtime_t *rt, double until) {
    struct pollfd pfd = {.fd = ruv_runtime_backend_fd(rt), .events = POLLIN};
    CHECK(pfd.fd >= 0);
    int timeout = ruv_runtime_backend_timeout(rt);
    CHECK(timeout >= -1);
    double left = until - now_seconds();
    int cap = left > 0 ? (int)(left * 1000) + 1 : 0;
    if (timeout < 0 || timeout > cap) timeout = cap;
    CHECK(poll(&pfd, 1, timeout) >= 0);
    CHECK(ruv_runtime_run_once(rt) >= 0);
}

/* Runs the runtime for `seconds`. */
static void run_for(ruv_runtime_t *rt, double seconds) {
    double until = now_seconds() + seconds;
    while (now_seconds() < until) poll_once(rt, until);
}

/* Runs the runtime until *counter reaches target; fails after `limit` seconds. */
static void run_until(ruv_runtime_t *rt, const int *counter, int target, double limit) {
    double until = now_seconds() + limit;
    while (*counter < target) {
        CHECK(now_seconds() < until);
        poll_once(rt, until);
    }
}

/* ---- subjects --------------------------------------------------------------------- */

static void case_subject(void) {
    ruv_subject_t *subject = NULL;
    ruv_signal_t *signal = NULL;
    CHECK_RC(ruv_subject_create(0, &subject));
    CHECK_RC(ruv_subject_signal(subject, &signal));
    push(subject, "before");            /* nobody listens yet: lost (a hot signal) */
    subscribe_rec(signal, "a");
    push(subject, "one");
    subscribe_rec(signal, "b");
    push(subject, "two");
    CHECK_RC(ruv_subject_send_next(subject, NULL, 0)); /* an empty value */
    CHECK_RC(ruv_subject_send_error(subject, UV_ECONNRESET, "peer went away"));
    CHECK_EQ(ruv_subject_send_next(subject, "late", 4), RUV_ECLOSED);
    CHECK_EQ(ruv_subject_send_completed(subject), RUV_ECLOSED);
    CHECK_EQ(ruv_subject_send_error(subject, -1, NULL), RUV_ECLOSED);
    subscribe_rec(signal, "c");          /* a terminated subject replays its end */
    ruv_signal_release(signal);
    ruv_subject_release(subject);

    /* A replay subject, and a custom error code of the program's own. */
    CHECK_RC(ruv_subject_create(2, &subject));
    push(subject, "r1");
    push(subject, "r2");
    push(subject, "r3");
    CHECK_RC(ruv_subject_signal(subject, &signal));
    subscribe_rec(signal, "replay");
    CHECK_EQ(ruv_subject_send_error(subject, 5, NULL), UV_EINVAL); /* codes are negative */
    CHECK_RC(ruv_subject_send_error(subject, -777, "mine"));
    ruv_signal_release(signal);
    ruv_subject_release(subject);
}

/* ---- operators -------------------------------------------------------------------- */

static int not_x(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    return !(len > 0 && ((const char *)bytes)[0] == 'x');
}

/* Upper-cases; drops "skip"; fails on "boom" with a code of our own. */
static int upper(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx) {
    CHECK(strcmp((const char *)ctx, "map-ctx") == 0);
    if (len == 4 && memcmp(bytes, "skip", 4) == 0) return 1;
    if (len == 4 && memcmp(bytes, "boom", 4) == 0) return -9999;
    for (size_t i = 0; i < len; i++) {
        char c = ((const char *)bytes)[i];
        if (c >= 'a' && c <= 'z') c = (char)(c - 32);
        CHECK_RC(ruv_buffer_append(out, &c, 1));
    }
    return 0;
}

static ruv_signal_t *to_pair(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    if (len == 1 && ((const char *)bytes)[0] == '0') return NULL; /* NULL: empty */
    char text[64];
    snprintf(text, sizeof text, "%.*s-%.*s", (int)len, (const char *)bytes, (int)len, (const char *)bytes);
    ruv_signal_t *a = just(text), *b = just("+"), *both = NULL;
    CHECK_RC(ruv_signal_concat(a, b, &both));
    ruv_signal_release(a);
    ruv_signal_release(b);
    return both;
}

/* For switch_to_latest: each value's inner signal is a fresh subject we keep. */
static ruv_subject_t *inner_subjects[4];
static int inner_count;
static ruv_signal_t *to_inner(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    ruv_subject_t *s = NULL;
    ruv_signal_t *sig = NULL;
    CHECK_RC(ruv_subject_create(0, &s));
    CHECK_RC(ruv_subject_signal(s, &sig));
    inner_subjects[inner_count++] = s;
    return sig;
}

static void case_operators(void) {
    ruv_subject_t *subject = NULL;
    ruv_signal_t *source = NULL, *filtered = NULL, *mapped = NULL, *taken = NULL, *skipped = NULL, *distinct = NULL;
    CHECK_RC(ruv_subject_create(0, &subject));
    CHECK_RC(ruv_subject_signal(subject, &source));
    CHECK_RC(ruv_signal_filter(source, not_x, NULL, &filtered));
    CHECK_RC(ruv_signal_map(filtered, upper, "map-ctx", &mapped));
    CHECK_RC(ruv_signal_skip(mapped, 1, &skipped));
    CHECK_RC(ruv_signal_take(skipped, 3, &taken));
    CHECK_RC(ruv_signal_distinct_until_changed(source, &distinct));
    subscribe_rec(mapped, "map");
    subscribe_rec(taken, "take");
    subscribe_rec(distinct, "distinct");
    const char *values[] = {"a", "xa", "skip", "b", "b", "c", "d", "boom", "e"};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) push(subject, values[i]);
    ruv_signal_release(source);
    ruv_signal_release(filtered);
    ruv_signal_release(mapped);
    ruv_signal_release(taken);
    ruv_signal_release(skipped);
    ruv_signal_release(distinct);
    ruv_subject_release(subject);

    /* merge, merge_many, concat, start_with, catch_to, retry, take_until, lines. */
    ruv_signal_t *one = just("1"), *two = just("2"), *three = just("3"), *out = NULL;
    CHECK_RC(ruv_signal_merge(one, two, &out));
    subscribe_rec(out, "merge");
    ruv_signal_release(out);
    ruv_signal_t *list[] = {one, two, three};
    CHECK_RC(ruv_signal_merge_many(list, 3, &out));
    subscribe_rec(out, "merge_many");
    ruv_signal_release(out);
    CHECK_RC(ruv_signal_merge_many(NULL, 0, &out));
    subscribe_rec(out, "merge_none");
    ruv_signal_release(out);
    CHECK_RC(ruv_signal_concat(one, two, &out));
    subscribe_rec(out, "concat");
    ruv_signal_release(out);
    CHECK_RC(ruv_signal_start_with(three, "0", 1, &out));
    subscribe_rec(out, "start_with");
    ruv_signal_release(out);

    ruv_signal_t *failing = NULL, *err = NULL, *retried = NULL, *caught = NULL;
    CHECK_RC(ruv_signal_error(UV_EPIPE, NULL, &err));
    CHECK_RC(ruv_signal_concat(one, err, &failing));
    CHECK_RC(ruv_signal_retry(failing, 2, &retried));
    subscribe_rec(retried, "retry");
    CHECK_RC(ruv_signal_catch_to(failing, two, &caught));
    subscribe_rec(caught, "catch_to");
    ruv_signal_release(err);
    ruv_signal_release(failing);
    ruv_signal_release(retried);
    ruv_signal_release(caught);

    ruv_subject_t *src = NULL, *trigger = NULL;
    ruv_signal_t *src_sig = NULL, *trigger_sig = NULL, *until = NULL;
    CHECK_RC(ruv_subject_create(0, &src));
    CHECK_RC(ruv_subject_create(0, &trigger));
    CHECK_RC(ruv_subject_signal(src, &src_sig));
    CHECK_RC(ruv_subject_signal(trigger, &trigger_sig));
    CHECK_RC(ruv_signal_take_until(src_sig, trigger_sig, &until));
    subscribe_rec(until, "take_until");
    push(src, "u1");
    push(trigger, "stop");
    push(src, "u2");

    ruv_signal_t *lines = NULL;
    CHECK_RC(ruv_signal_lines(src_sig, 0, &lines));
    subscribe_rec(lines, "lines");
    push(src, "al");
    push(src, "pha\r\nbeta\ngam");
    push(src, "ma");
    CHECK_RC(ruv_subject_send_completed(src));
    ruv_signal_release(lines);
    ruv_signal_release(until);
    ruv_signal_release(src_sig);
    ruv_signal_release(trigger_sig);
    ruv_subject_release(src);
    ruv_subject_release(trigger);

    ruv_signal_t *short_lines = NULL, *long_line = just("0123456789\n");
    CHECK_RC(ruv_signal_lines(long_line, 4, &short_lines));
    subscribe_rec(short_lines, "lines_limit");
    ruv_signal_release(short_lines);
    ruv_signal_release(long_line);

    /* flatten_map: each value becomes "v-v" then "+"; "0" maps to NULL (empty). */
    ruv_subject_t *outer = NULL;
    ruv_signal_t *outer_sig = NULL, *flat = NULL, *latest = NULL;
    CHECK_RC(ruv_subject_create(0, &outer));
    CHECK_RC(ruv_subject_signal(outer, &outer_sig));
    CHECK_RC(ruv_signal_flatten_map(outer_sig, to_pair, NULL, &flat));
    subscribe_rec(flat, "flatten_map");
    push(outer, "p");
    push(outer, "0");
    push(outer, "q");
    CHECK_RC(ruv_subject_send_completed(outer));
    ruv_signal_release(flat);
    ruv_signal_release(outer_sig);
    ruv_subject_release(outer);

    /* switch_to_latest: the first inner is dropped once the second arrives. */
    CHECK_RC(ruv_subject_create(0, &outer));
    CHECK_RC(ruv_subject_signal(outer, &outer_sig));
    CHECK_RC(ruv_signal_switch_to_latest(outer_sig, to_inner, NULL, &latest));
    subscribe_rec(latest, "switch");
    push(outer, "A");
    push(inner_subjects[0], "a1");
    push(outer, "B");
    push(inner_subjects[0], "a2"); /* dropped: A is no longer the latest */
    push(inner_subjects[1], "b1");
    CHECK_RC(ruv_subject_send_completed(outer));
    CHECK_RC(ruv_subject_send_completed(inner_subjects[1]));
    for (int i = 0; i < inner_count; i++) ruv_subject_release(inner_subjects[i]);
    ruv_signal_release(latest);
    ruv_signal_release(outer_sig);
    ruv_subject_release(outer);

    ruv_signal_release(one);
    ruv_signal_release(two);
    ruv_signal_release(three);
}

/* ---- time, on an own loop driven by poll() ----------------------------------------- */

static int done_count;
static void count_completed(void *ctx) {
    printf("%s completed\n", (const char *)ctx);
    done_count++;
}
static void count_error(int code, const char *message, void *ctx) {
    (void)message;
    printf("%s error %s\n", (const char *)ctx, ruv_err_name(code));
    done_count++;
}
static void tick_next(const void *bytes, size_t len, void *ctx) {
    CHECK(len > 0);
    for (size_t i = 0; i < len; i++) CHECK(((const char *)bytes)[i] >= '0' && ((const char *)bytes)[i] <= '9');
    printf("%s tick\n", (const char *)ctx);
}

static void case_time(void) {
    ruv_runtime_t *rt = NULL;
    CHECK_RC(ruv_runtime_create(NULL, &rt));
    CHECK(ruv_runtime_loop(rt) != NULL);
    /* Created with its wake-up fd in the epoll set already (one iteration at creation), so
       that calls made before the first run_once can make the backend fd readable. */
    CHECK_EQ(ruv_runtime_backend_timeout(rt), -1); /* nothing scheduled: wait for the fd */
    CHECK_EQ(ruv_runtime_run_once(rt), 0);         /* nothing keeps the loop alive */
    CHECK_EQ(ruv_runtime_backend_timeout(rt), -1);

    ruv_signal_t *interval = NULL, *three = NULL, *timer = NULL;
    CHECK_EQ(ruv_signal_interval(rt, 0, &interval), RUV_EARGUMENT);
    CHECK_EQ(ruv_signal_timer(rt, -1, &timer), RUV_EARGUMENT);
    /* The timer first: its deadline (now + 1 ms) is then before the interval's first one
       (a later now + 5 ms) however slowly the calls run (under a sanitizer on a loaded
       machine, subscribing the timer second once came more than 4 ms after the interval). */
    CHECK_RC(ruv_signal_timer(rt, 0.001, &timer));
    CHECK_RC(ruv_signal_subscribe(timer, tick_next, count_error, count_completed, "timer", NULL));
    CHECK_RC(ruv_signal_interval(rt, 0.005, &interval));
    CHECK_RC(ruv_signal_take(interval, 3, &three));
    CHECK_RC(ruv_signal_subscribe(three, tick_next, count_error, count_completed, "interval", NULL));
    run_until(rt, &done_count, 2, 5);

    /* throttle and debounce: a burst, then quiet; completion flushes throttle only. */
    ruv_subject_t *subject = NULL;
    ruv_signal_t *source = NULL, *throttled = NULL, *debounced = NULL, *delayed = NULL, *timed = NULL, *never = NULL;
    CHECK_RC(ruv_subject_create(0, &subject));
    CHECK_RC(ruv_subject_signal(subject, &source));
    CHECK_EQ(ruv_signal_throttle(source, rt, -0.5, &throttled), RUV_EARGUMENT);
    CHECK_RC(ruv_signal_throttle(source, rt, 0.02, &throttled));
    CHECK_RC(ruv_signal_debounce(source, rt, 0.02, &debounced));
    CHECK_RC(ruv_signal_delay(source, rt, 0.01, &delayed));
    CHECK_RC(ruv_signal_never(&never));
    CHECK_RC(ruv_signal_timeout(never, rt, 0.01, &timed));
    done_count = 0;
    CHECK_RC(ruv_signal_subscribe(throttled, rec_next, count_error, count_completed, "throttle", NULL));
    CHECK_RC(ruv_signal_subscribe(debounced, rec_next, count_error, count_completed, "debounce", NULL));
    CHECK_RC(ruv_signal_subscribe(delayed, rec_next, count_error, count_completed, "delay", NULL));
    CHECK_RC(ruv_signal_subscribe(timed, rec_next, count_error, count_completed, "timeout", NULL));
    push(subject, "t1");
    push(subject, "t2");
    push(subject, "t3");
    run_for(rt, 0.15);
    push(subject, "t4");
    CHECK_RC(ruv_subject_send_completed(subject));
    run_until(rt, &done_count, 4, 5);
    ruv_signal_release(interval);
    ruv_signal_release(three);
    ruv_signal_release(timer);
    ruv_signal_release(source);
    ruv_signal_release(throttled);
    ruv_signal_release(debounced);
    ruv_signal_release(delayed);
    ruv_signal_release(timed);
    ruv_signal_release(never);
    ruv_subject_release(subject);
    CHECK_EQ(ruv_runtime_run_once(rt), 0); /* nothing left alive */
    CHECK_RC(ruv_runtime_close(rt));
    CHECK_RC(ruv_runtime_close(rt)); /* again: nothing */
    CHECK_EQ(ruv_runtime_run_once(rt), RUV_ECLOSED);
    CHECK_EQ(ruv_runtime_backend_fd(rt), RUV_ECLOSED);
    ruv_runtime_release(rt);
}

/* ---- a host's uv_loop_t ------------------------------------------------------------ */

static void case_host_loop(void) {
    uv_loop_t loop;
    CHECK_RC(uv_loop_init(&loop));
    ruv_runtime_t *rt = NULL;
    CHECK_RC(ruv_runtime_create(&loop, &rt));
    CHECK(ruv_runtime_loop(rt) == &loop);
    CHECK_EQ(ruv_runtime_run_once(rt), RUV_EHOSTLOOP);
    /* ReactiveUV's own handles never keep the host's uv_run alive. */
    CHECK_EQ(uv_run(&loop, UV_RUN_DEFAULT), 0);

    ruv_signal_t *interval = NULL, *three = NULL;
    CHECK_RC(ruv_signal_interval(rt, 0.002, &interval));
    CHECK_RC(ruv_signal_take(interval, 3, &three));
    done_count = 0;
    CHECK_RC(ruv_signal_subscribe(three, tick_next, count_error, count_completed, "host", NULL));
    ruv_signal_release(interval);
    ruv_signal_release(three);
    /* The active timer keeps uv_run going until take(3) completes and closes it. */
    CHECK_EQ(uv_run(&loop, UV_RUN_DEFAULT), 0);
    CHECK_EQ(done_count, 1);

    CHECK_RC(ruv_runtime_close(rt));
    ruv_runtime_release(rt);
    CHECK_EQ(uv_run(&loop, UV_RUN_DEFAULT), 0); /* runs ReactiveUV's close callbacks */
    CHECK_RC(uv_loop_close(&loop));
    printf("host loop closed\n");
}

/* ---- threads ----------------------------------------------------------------------- */

struct thread_check {
    ruv_runtime_t *rt;
    int run_once, timeout, close;
};

static void *wrong_thread(void *arg) {
    struct thread_check *t = arg;
    t->run_once = ruv_runtime_run_once(t->rt);
    t->timeout = ruv_runtime_backend_timeout(t->rt);
    t->close = ruv_runtime_close(t->rt);
    return NULL;
}

static atomic_int in_callback, overlaps, received;
static void serial_next(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    if (atomic_fetch_add(&in_callback, 1) != 0) atomic_fetch_add(&overlaps, 1);
    atomic_fetch_add(&received, 1);
    atomic_fetch_sub(&in_callback, 1);
}

#define SENDERS 4
#define PER_SENDER 20000
static void *sender(void *arg) {
    ruv_subject_t *subject = arg;
    for (int i = 0; i < PER_SENDER; i++) CHECK_RC(ruv_subject_send_next(subject, "v", 1));
    return NULL;
}

static ruv_runtime_t *nested_rt;
static int nested_rc = 1;
static void nested_next(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    nested_rc = ruv_runtime_run_once(nested_rt);
}

static pthread_t loop_thread;
static int loop_thread_deliveries, other_thread_deliveries;
static void where_next(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    if (pthread_equal(pthread_self(), loop_thread)) loop_thread_deliveries++;
    else other_thread_deliveries++;
}

static void case_threads(void) {
    ruv_runtime_t *rt = NULL;
    CHECK_RC(ruv_runtime_create(NULL, &rt));
    struct thread_check t = {.rt = rt};
    pthread_t th;
    CHECK_RC(pthread_create(&th, NULL, wrong_thread, &t));
    pthread_join(th, NULL);
    CHECK_EQ(t.run_once, RUV_EWRONGTHREAD);
    CHECK_EQ(t.timeout, RUV_EWRONGTHREAD);
    CHECK_EQ(t.close, RUV_EWRONGTHREAD);
    printf("wrong thread: %s\n", ruv_err_name(t.run_once));

    /* Sends from several threads are serialized per subscription. */
    ruv_subject_t *subject = NULL;
    ruv_signal_t *signal = NULL;
    CHECK_RC(ruv_subject_create(0, &subject));
    CHECK_RC(ruv_subject_signal(subject, &signal));
    CHECK_RC(ruv_signal_subscribe(signal, serial_next, NULL, NULL, NULL, NULL));
    pthread_t senders[SENDERS];
    for (int i = 0; i < SENDERS; i++) CHECK_RC(pthread_create(&senders[i], NULL, sender, subject));
    for (int i = 0; i < SENDERS; i++) pthread_join(senders[i], NULL);
    CHECK_EQ(atomic_load(&received), SENDERS * PER_SENDER);
    CHECK_EQ(atomic_load(&overlaps), 0);
    printf("serialized %d\n", atomic_load(&received));

    /* deliver_on brings worker threads' values onto the loop thread; the worker's sends
       wake a poll() that waits on the backend fd with no timeout of its own. */
    ruv_signal_t *on_loop = NULL;
    CHECK_RC(ruv_signal_deliver_on(signal, rt, &on_loop));
    loop_thread = pthread_self();
    CHECK_RC(ruv_signal_subscribe(on_loop, where_next, NULL, NULL, NULL, NULL));
    CHECK_RC(ruv_runtime_run_once(rt)); /* nothing alive yet; the wake-up fd is now watched */
    atomic_store(&received, 0);
    CHECK_RC(pthread_create(&th, NULL, sender, subject));
    struct pollfd pfd = {.fd = ruv_runtime_backend_fd(rt), .events = POLLIN};
    double start = now_seconds();
    while (loop_thread_deliveries < PER_SENDER) {
        int timeout = ruv_runtime_backend_timeout(rt);
        CHECK(timeout == -1 || timeout == 0);
        CHECK(poll(&pfd, 1, timeout < 0 ? 2000 : timeout) >= 0);
        CHECK(ruv_runtime_run_once(rt) >= 0);
        CHECK(now_seconds() - start < 10);
    }
    pthread_join(th, NULL);
    CHECK_EQ(other_thread_deliveries, 0);
    printf("delivered on loop %d\n", loop_thread_deliveries);

    /* run_once from inside one of the runtime's callbacks is refused. */
    ruv_signal_t *timer = NULL;
    nested_rt = rt;
    CHECK_RC(ruv_signal_timer(rt, 0, &timer));
    CHECK_RC(ruv_signal_subscribe(timer, nested_next, NULL, NULL, NULL, NULL));
    double until = now_seconds() + 5;
    while (nested_rc == 1 && now_seconds() < until) poll_once(rt, until);
    CHECK_EQ(nested_rc, UV_EBUSY);
    printf("nested run_once: %s\n", ruv_err_name(nested_rc));

    ruv_signal_release(timer);
    ruv_signal_release(on_loop);
    ruv_signal_release(signal);
    ruv_subject_release(subject);
    CHECK_RC(ruv_runtime_close(rt));
    ruv_runtime_release(rt);
}

/* ---- callbacks that dispose their own subscription or release their signal --------- */

struct self_dispose {
    ruv_subscription_t *subscription;
    int calls;
};

static void dispose_on_second(const void *bytes, size_t len, void *ctx) {
    struct self_dispose *s = ctx;
    printf("self next %.*s\n", (int)len, (const char *)bytes);
    if (++s->calls == 2) {
        CHECK_RC(ruv_subscription_dispose(s->subscription));
        CHECK_EQ(ruv_subscription_is_disposed(s->subscription), 1);
        CHECK_RC(ruv_subscription_dispose(s->subscription)); /* twice: nothing */
        ruv_subscription_release(s->subscription);           /* and release it, inside */
        s->subscription = NULL;
    }
}
static void must_not_complete(void *ctx) {
    (void)ctx;
    printf("FAIL completed after dispose\n");
    exit(1);
}

struct releaser {
    ruv_signal_t *signal;
};
static void release_signal(const void *bytes, size_t len, void *ctx) {
    struct releaser *r = ctx;
    printf("release next %.*s\n", (int)len, (const char *)bytes);
    if (r->signal) {
        ruv_signal_release(r->signal); /* the last C reference to what we are subscribed to */
        r->signal = NULL;
    }
}

static void release_completed(void *ctx) {
    CHECK(((struct releaser *)ctx)->signal == NULL);
    printf("release completed\n");
}

static void case_reentrancy(void) {
    ruv_subject_t *subject = NULL;
    ruv_signal_t *signal = NULL, *mapped = NULL;
    CHECK_RC(ruv_subject_create(0, &subject));
    CHECK_RC(ruv_subject_signal(subject, &signal));
    CHECK_RC(ruv_signal_map(signal, upper, "map-ctx", &mapped));

    /* Disposing its own subscription from inside the callback. */
    struct self_dispose s = {0};
    CHECK_RC(ruv_signal_subscribe(mapped, dispose_on_second, rec_error, must_not_complete, &s, &s.subscription));
    push(subject, "s1");
    push(subject, "s2");
    push(subject, "s3");

    /* A synchronous source: the handle is written before the first callback runs. */
    ruv_signal_t *one = just("sync"), *twice = NULL, *both = NULL;
    CHECK_RC(ruv_signal_concat(one, one, &twice));
    CHECK_RC(ruv_signal_concat(twice, one, &both));
    struct self_dispose sync = {0};
    CHECK_RC(ruv_signal_subscribe(both, dispose_on_second, rec_error, must_not_complete, &sync, &sync.subscription));
    CHECK_EQ(sync.calls, 2);

    /* Releasing the signal it is subscribed to, from inside the callback. */
    struct releaser r = {.signal = mapped};
    CHECK_RC(ruv_signal_subscribe(mapped, release_signal, rec_error, release_completed, &r, NULL));
    mapped = NULL;
    push(subject, "r1");
    push(subject, "r2");
    CHECK_RC(ruv_subject_send_completed(subject));
    ruv_signal_release(one);
    ruv_signal_release(twice);
    ruv_signal_release(both);
    ruv_signal_release(signal);
    ruv_subject_release(subject);
}

/* Disposing from another thread while a worker sends: once dispose returns, no callback runs. */
static atomic_int disposed_flag, late_calls, stop_sending;
static void watch_next(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    if (atomic_load(&disposed_flag)) atomic_fetch_add(&late_calls, 1);
}
static void *busy_sender(void *arg) {
    ruv_subject_t *subject = arg;
    while (!atomic_load(&stop_sending)) ruv_subject_send_next(subject, "b", 1);
    return NULL;
}

static void case_dispose_threads(void) {
    for (int round = 0; round < 200; round++) {
        ruv_subject_t *subject = NULL;
        ruv_signal_t *signal = NULL;
        ruv_subscription_t *sub = NULL;
        CHECK_RC(ruv_subject_create(0, &subject));
        CHECK_RC(ruv_subject_signal(subject, &signal));
        atomic_store(&disposed_flag, 0);
        atomic_store(&stop_sending, 0);
        CHECK_RC(ruv_signal_subscribe(signal, watch_next, NULL, NULL, NULL, &sub));
        pthread_t th;
        CHECK_RC(pthread_create(&th, NULL, busy_sender, subject));
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        CHECK_RC(ruv_subscription_dispose(sub));
        atomic_store(&disposed_flag, 1);
        nanosleep(&ts, NULL);
        atomic_store(&stop_sending, 1);
        pthread_join(th, NULL);
        CHECK_EQ(ruv_subscription_is_disposed(sub), 1);
        ruv_subscription_release(sub);
        ruv_signal_release(signal);
        ruv_subject_release(subject);
    }
    CHECK_EQ(atomic_load(&late_calls), 0);
    printf("no callback after dispose\n");
}

/* ---- files and unix signals ------------------------------------------------------- */

static size_t bytes_read;
static void count_bytes(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)ctx;
    bytes_read += len;
}

static int tail_lines;
static void tail_next(const void *bytes, size_t len, void *ctx) {
    rec_next(bytes, len, ctx);
    tail_lines++;
}

static int unix_signals;
static void unix_next(const void *bytes, size_t len, void *ctx) {
    int signum = -1;
    CHECK_EQ(len, sizeof signum); /* the number, not its digits */
    memcpy(&signum, bytes, sizeof signum);
    printf("%s next %d\n", (const char *)ctx, signum);
    unix_signals++;
}

static void case_files(const char *dir) {
    char path[512], missing[512];
    snprintf(path, sizeof path, "%s/lines.txt", dir);
    snprintf(missing, sizeof missing, "%s/missing.txt", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("first\r\nsecond\n\nlast\n", f);
    fclose(f);

    ruv_runtime_t *rt = NULL;
    CHECK_RC(ruv_runtime_create(NULL, &rt));
    ruv_signal_t *lines = NULL, *bytes = NULL, *nothing = NULL, *sig = NULL, *tail = NULL;
    CHECK_EQ(ruv_file_lines(rt, NULL, &lines), UV_EINVAL);
    CHECK_EQ(ruv_file_lines(NULL, path, &lines), UV_EINVAL);
    CHECK_RC(ruv_file_lines(rt, path, &lines));
    CHECK_RC(ruv_file_read(rt, path, &bytes));
    CHECK_RC(ruv_file_lines(rt, missing, &nothing));
    done_count = 0;
    CHECK_RC(ruv_signal_subscribe(lines, rec_next, count_error, count_completed, "lines", NULL));
    run_until(rt, &done_count, 1, 5);
    CHECK_RC(ruv_signal_subscribe(bytes, count_bytes, count_error, count_completed, "read", NULL));
    run_until(rt, &done_count, 2, 5);
    printf("read %zu bytes\n", bytes_read);
    CHECK_RC(ruv_signal_subscribe(nothing, rec_next, count_error, count_completed, "missing", NULL));
    run_until(rt, &done_count, 3, 5);

    /* tail -F: the file's last line first; once that arrived, an append. */
    CHECK_RC(ruv_file_tail(rt, path, 1, &tail));
    ruv_subscription_t *tail_sub = NULL;
    tail_lines = 0;
    CHECK_RC(ruv_signal_subscribe(tail, tail_next, rec_error, rec_completed, "tail", &tail_sub));
    run_until(rt, &tail_lines, 1, 5);
    f = fopen(path, "a");
    fputs("appended\n", f);
    fclose(f);
    run_until(rt, &tail_lines, 2, 5);
    CHECK_RC(ruv_subscription_dispose(tail_sub));
    ruv_subscription_release(tail_sub);

    /* ruv_file_tail_ex with a 50-byte limit: a 100-byte line ends the plain tail with
       RUV_ELINETOOLONG after the line before it; with RUV_TAIL_SKIP_LONG_LINES (and
       polling) it is left out and the line after it follows. */
    CHECK_EQ(ruv_file_tail_ex(rt, path, 0, 0, 4u, &tail), UV_EINVAL);
    CHECK_EQ(ruv_file_tail_ex(NULL, path, 0, 0, 0, &tail), UV_EINVAL);
    CHECK_EQ(ruv_file_tail_ex(rt, path, 0, (size_t)-1, 0, &tail), UV_EINVAL);
    const char *labels[2] = {"strict", "skip"};
    const unsigned int flags[2] = {0, RUV_TAIL_SKIP_LONG_LINES | RUV_TAIL_POLL};
    for (int k = 0; k < 2; k++) {
        char long_path[512];
        snprintf(long_path, sizeof long_path, "%s/long-%d.txt", dir, k);
        f = fopen(long_path, "w");
        CHECK(f != NULL);
        fputs("short\n", f);
        fclose(f);
        ruv_signal_t *limited = NULL;
        ruv_subscription_t *limited_sub = NULL;
        CHECK_RC(ruv_file_tail_ex(rt, long_path, 1, 50, flags[k], &limited));
        tail_lines = 0;
        done_count = 0;
        CHECK_RC(ruv_signal_subscribe(limited, tail_next, count_error, count_completed, (void *)labels[k], &limited_sub));
        run_until(rt, &tail_lines, 1, 5);
        f = fopen(long_path, "a");
        for (int i = 0; i < 100; i++) fputc('x', f);
        fputs("\nafter\n", f);
        fclose(f);
        if (k == 0) run_until(rt, &done_count, 1, 5);
        else run_until(rt, &tail_lines, 2, 5);
        CHECK_RC(ruv_subscription_dispose(limited_sub));
        ruv_subscription_release(limited_sub);
        ruv_signal_release(limited);
    }

    /* A unix signal, raised by ourselves. */
    CHECK_RC(ruv_unix_signal_watch(rt, SIGUSR1, &sig));
    ruv_subscription_t *sig_sub = NULL;
    CHECK_RC(ruv_signal_subscribe(sig, unix_next, rec_error, rec_completed, "unix", &sig_sub));
    raise(SIGUSR1);
    run_until(rt, &unix_signals, 1, 5);
    CHECK_RC(ruv_subscription_dispose(sig_sub));
    ruv_subscription_release(sig_sub);

    ruv_signal_release(lines);
    ruv_signal_release(bytes);
    ruv_signal_release(nothing);
    ruv_signal_release(tail);
    ruv_signal_release(sig);
    CHECK_RC(ruv_runtime_close(rt));
    ruv_runtime_release(rt);
}

/* ---- TCP ---------------------------------------------------------------------------- */

struct tcp_state {
    ruv_runtime_t *rt;
    int port;
    int server_connections, server_done, client_done, client_closed, refused, in_use;
    char client_lines[256];
    char peer[64];
    ruv_connection_t *client;
};

static void tcp_listening(const char *host, int port, void *ctx) {
    struct tcp_state *t = ctx;
    CHECK(strcmp(host, "127.0.0.1") == 0);
    t->port = port;
}

/* The server's reply to each line: "echo: <line>\n". */
static int echo_line(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx) {
    (void)ctx;
    CHECK_RC(ruv_buffer_append(out, "echo: ", 6));
    CHECK_RC(ruv_buffer_append(out, bytes, len));
    CHECK_RC(ruv_buffer_append(out, "\n", 1));
    return 0;
}

static void server_sent(void *ctx) { ((struct tcp_state *)ctx)->server_done++; }
static void server_send_error(int code, const char *message, void *ctx) {
    (void)ctx;
    printf("server send error %s %s\n", ruv_err_name(code), message);
}

static void tcp_accepted(ruv_connection_t *c, void *ctx) {
    struct tcp_state *t = ctx;
    t->server_connections++;
    CHECK(ruv_connection_peer(c, t->peer, sizeof t->peer) > 0);
    ruv_signal_t *lines = NULL, *replies = NULL;
    CHECK_RC(ruv_connection_lines(c, &lines));
    CHECK_RC(ruv_signal_map(lines, echo_line, NULL, &replies));
    CHECK_RC(ruv_connection_send(c, replies, 1, server_send_error, server_sent, t, NULL));
    ruv_signal_release(lines);
    ruv_signal_release(replies);
    ruv_connection_release(c);
}

static void client_line(const void *bytes, size_t len, void *ctx) {
    struct tcp_state *t = ctx;
    strncat(t->client_lines, bytes, len);
    strcat(t->client_lines, "|");
}
static void client_lines_done(void *ctx) { ((struct tcp_state *)ctx)->client_done++; }
static void client_closed(void *ctx) { ((struct tcp_state *)ctx)->client_closed++; }

static void tcp_connected(ruv_connection_t *c, void *ctx) {
    struct tcp_state *t = ctx;
    t->client = c; /* kept until the end: a handle outliving its connection */
    ruv_signal_t *lines = NULL, *request = NULL;
    CHECK_RC(ruv_connection_lines(c, &lines));
    CHECK_RC(ruv_signal_subscribe(lines, client_line, rec_error, client_lines_done, t, NULL));
    CHECK_RC(ruv_connection_write(c, "hello\n", 6));
    CHECK_RC(ruv_signal_return("world\n", 6, &request));
    CHECK_RC(ruv_connection_send(c, request, 1, rec_error, NULL, t, NULL)); /* then half-close */
    ruv_signal_release(lines);
    ruv_signal_release(request);
}

static void connect_failed(int code, const char *message, void *ctx) {
    struct tcp_state *t = ctx;
    CHECK(strstr(message, "127.0.0.1") != NULL);
    t->refused = code;
}
static void listen_failed(int code, const char *message, void *ctx) {
    struct tcp_state *t = ctx;
    (void)message;
    t->in_use = code;
}
static void never_connection(ruv_connection_t *c, void *ctx) {
    (void)ctx;
    ruv_connection_release(c);
    printf("FAIL unexpected connection\n");
    exit(1);
}

static void case_tcp(void) {
    struct tcp_state t = {0};
    CHECK_RC(ruv_runtime_create(NULL, &t.rt));
    ruv_subscription_t *server = NULL, *client = NULL, *second = NULL, *refused = NULL;
    CHECK_EQ(ruv_tcp_listen(t.rt, "127.0.0.1", 70000, NULL, tcp_accepted, NULL, &t, &server), UV_EINVAL);
    CHECK_EQ(ruv_tcp_listen(t.rt, "127.0.0.1", 0, NULL, NULL, NULL, &t, &server), UV_EINVAL);
    CHECK_EQ(ruv_tcp_connect(t.rt, "127.0.0.1", 0, tcp_connected, NULL, NULL, &t, &client), UV_EINVAL);
    CHECK_RC(ruv_tcp_listen(t.rt, "127.0.0.1", 0, tcp_listening, tcp_accepted, rec_error, &t, &server));
    double until = now_seconds() + 5;
    while (t.port == 0) {
        CHECK(now_seconds() < until);
        poll_once(t.rt, until);
    }
    printf("listening\n");

    CHECK_RC(ruv_tcp_connect(t.rt, "127.0.0.1", t.port, tcp_connected, rec_error, client_closed, &t, &client));
    run_until(t.rt, &t.client_closed, 1, 10);
    run_until(t.rt, &t.server_done, 1, 10);
    printf("client lines %s\n", t.client_lines);
    printf("client lines completed %d, server connections %d, server sent %d, client closed %d\n", t.client_done,
           t.server_connections, t.server_done, t.client_closed);
    printf("server saw peer 127.0.0.1: %d\n", strncmp(t.peer, "127.0.0.1:", 10) == 0);
    CHECK_EQ(ruv_subscription_is_disposed(client), 1);
    CHECK_EQ(ruv_connection_write(t.client, "late", 4), RUV_ECLOSED);
    ruv_connection_release(t.client);

    /* The same port again: EADDRINUSE, to the listen subscription's error callback. */
    CHECK_RC(ruv_tcp_listen(t.rt, "127.0.0.1", t.port, NULL, never_connection, listen_failed, &t, &second));
    until = now_seconds() + 5;
    while (t.in_use == 0) {
        CHECK(now_seconds() < until);
        poll_once(t.rt, until);
    }
    printf("second listen %s\n", ruv_err_name(t.in_use));

    /* Nobody listens any more once the server is disposed: ECONNREFUSED. */
    CHECK_RC(ruv_subscription_dispose(server));
    run_for(t.rt, 0.05);
    CHECK_RC(ruv_tcp_connect(t.rt, "127.0.0.1", t.port, never_connection, connect_failed, NULL, &t, &refused));
    until = now_seconds() + 5;
    while (t.refused == 0) {
        CHECK(now_seconds() < until);
        poll_once(t.rt, until);
    }
    printf("connect %s\n", ruv_err_name(t.refused));

    ruv_subscription_release(server);
    ruv_subscription_release(client);
    ruv_subscription_release(second);
    ruv_subscription_release(refused);
    CHECK_RC(ruv_runtime_close(t.rt));
    ruv_runtime_release(t.rt);
}

/* ---- errors and argument checks ---------------------------------------------------- */

static void case_errors(void) {
    printf("%s %s\n", ruv_err_name(UV_ECONNREFUSED), ruv_strerror(UV_ECONNREFUSED));
    printf("%s %s\n", ruv_err_name(UV_EOF), ruv_strerror(UV_EOF));
    printf("%s %s\n", ruv_err_name(RUV_EWRONGTHREAD), ruv_strerror(RUV_EWRONGTHREAD));
    printf("%s %s\n", ruv_err_name(RUV_ETIMEOUT), ruv_strerror(RUV_ETIMEOUT));
    printf("%s %s\n", ruv_err_name(-123456), ruv_strerror(-123456));
    printf("%s\n", ruv_err_name(0));
    CHECK_EQ(ruv_version(), RUV_VERSION_HEX);
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", RUV_VERSION_MAJOR, RUV_VERSION_MINOR, RUV_VERSION_PATCH);
    CHECK(strcmp(ruv_version_string(), expected) == 0);

    ruv_signal_t *s = NULL, *o = NULL;
    CHECK_EQ(ruv_runtime_create(NULL, NULL), UV_EINVAL);
    CHECK(ruv_runtime_loop(NULL) == NULL);
    CHECK_EQ(ruv_runtime_backend_fd(NULL), UV_EINVAL);
    CHECK_EQ(ruv_runtime_backend_timeout(NULL), UV_EINVAL);
    CHECK_EQ(ruv_runtime_run_once(NULL), UV_EINVAL);
    CHECK_EQ(ruv_runtime_close(NULL), UV_EINVAL);
    CHECK_EQ(ruv_subject_create(0, NULL), UV_EINVAL);
    CHECK_EQ(ruv_subject_signal(NULL, &s), UV_EINVAL);
    CHECK_EQ(ruv_subject_send_next(NULL, "a", 1), UV_EINVAL);
    CHECK_EQ(ruv_signal_return(NULL, 3, &s), UV_EINVAL);
    CHECK_EQ(ruv_signal_error(0, NULL, &s), UV_EINVAL);
    CHECK_EQ(ruv_signal_empty(NULL), UV_EINVAL);
    CHECK_EQ(ruv_signal_filter(NULL, not_x, NULL, &o), UV_EINVAL);
    CHECK_RC(ruv_signal_empty(&s));
    CHECK_EQ(ruv_signal_filter(s, NULL, NULL, &o), UV_EINVAL);
    CHECK_EQ(ruv_signal_map(s, upper, NULL, NULL), UV_EINVAL);
    CHECK_EQ(ruv_signal_merge(s, NULL, &o), UV_EINVAL);
    ruv_signal_t *bad[] = {s, NULL};
    CHECK_EQ(ruv_signal_merge_many(bad, 2, &o), UV_EINVAL);
    CHECK_EQ(ruv_signal_merge_many(NULL, 2, &o), UV_EINVAL);
    CHECK_EQ(ruv_signal_throttle(s, NULL, 1, &o), UV_EINVAL);
    CHECK_EQ(ruv_signal_subscribe(NULL, NULL, NULL, NULL, NULL, NULL), UV_EINVAL);
    CHECK_EQ(ruv_subscription_dispose(NULL), UV_EINVAL);
    CHECK_EQ(ruv_subscription_is_disposed(NULL), UV_EINVAL);
    CHECK_EQ(ruv_buffer_append(NULL, "a", 1), UV_EINVAL);
    subscribe_rec(s, "empty");
    ruv_signal_release(s);
    /* Releasing NULL does nothing. */
    ruv_signal_release(NULL);
    ruv_subject_release(NULL);
    ruv_subscription_release(NULL);
    ruv_runtime_release(NULL);
    ruv_connection_release(NULL);

    /* An error signal with the default message, and a timeout's code. */
    CHECK_RC(ruv_signal_error(UV_ENOENT, NULL, &s));
    subscribe_rec(s, "error");
    ruv_signal_release(s);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s <case> [directory]\n", argv[0]);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "subject") == 0) case_subject();
    else if (strcmp(name, "operators") == 0) case_operators();
    else if (strcmp(name, "time") == 0) case_time();
    else if (strcmp(name, "host-loop") == 0) case_host_loop();
    else if (strcmp(name, "threads") == 0) case_threads();
    else if (strcmp(name, "reentrancy") == 0) case_reentrancy();
    else if (strcmp(name, "dispose-threads") == 0) case_dispose_threads();
    else if (strcmp(name, "errors") == 0) case_errors();
    else if (strcmp(name, "files") == 0 && argc == 3) case_files(argv[2]);
    else if (strcmp(name, "tcp") == 0) case_tcp();
    else {
        fprintf(stderr, "unknown case %s\n", name);
        return 2;
    }
    printf("ok\n");
    return 0;
}

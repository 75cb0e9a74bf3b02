/*
 * Calls every function reactiveuv.h declares, so that building it against libreactiveuv.so
 * proves each prototype has an exported definition (EmbedHeaderTests checks that every
 * declared name appears here). Where a call needs objects, it gets real ones; IO calls get
 * NULL arguments and must refuse them with a negative code.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "reactiveuv.h"

#define CHECK(cond)                                                       \
    do {                                                                  \
        if (!(cond)) {                                                    \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
            return 1;                                                     \
        }                                                                 \
    } while (0)

static int keep(const void *bytes, size_t len, void *ctx) { (void)bytes, (void)ctx; return len > 0; }
static int same(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx) {
    (void)ctx;
    return ruv_buffer_append(out, bytes, len);
}
static ruv_signal_t *inner(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    ruv_signal_t *s = NULL;
    return ruv_signal_return(bytes, len, &s) == 0 ? s : NULL;
}
static void on_next(const void *bytes, size_t len, void *ctx) { (void)bytes, (void)len, (void)ctx; }
static void on_error(int code, const char *message, void *ctx) { (void)code, (void)message, (void)ctx; }
static void on_done(void *ctx) { (void)ctx; }
static void on_connection(ruv_connection_t *c, void *ctx) { (void)ctx; ruv_connection_release(c); }
static void on_listening(const char *host, int port, void *ctx) { (void)host, (void)port, (void)ctx; }

int main(void) {
    CHECK(ruv_version() == RUV_VERSION_HEX);
    CHECK(strlen(ruv_version_string()) > 0);
    CHECK(strcmp(ruv_err_name(RUV_ECLOSED), "ECLOSED") == 0);
    CHECK(strlen(ruv_strerror(RUV_ECLOSED)) > 0);

    ruv_runtime_t *rt = NULL;
    CHECK(ruv_runtime_create(NULL, &rt) == 0);
    CHECK(ruv_runtime_loop(rt) != NULL);
    CHECK(ruv_runtime_backend_fd(rt) >= 0);
    CHECK(ruv_runtime_backend_timeout(rt) >= -1);
    CHECK(ruv_runtime_run_once(rt) >= 0);

    ruv_subject_t *subject = NULL;
    ruv_signal_t *s = NULL, *a = NULL, *b = NULL, *o = NULL;
    CHECK(ruv_subject_create(0, &subject) == 0);
    CHECK(ruv_subject_signal(subject, &s) == 0);
    CHECK(ruv_signal_return("x", 1, &a) == 0);
    CHECK(ruv_signal_empty(&b) == 0);
    ruv_signal_t *n = NULL, *e = NULL, *iv = NULL, *tm = NULL;
    CHECK(ruv_signal_never(&n) == 0);
    CHECK(ruv_signal_error(UV_EINVAL, "x", &e) == 0);
    CHECK(ruv_signal_interval(rt, 1, &iv) == 0);
    CHECK(ruv_signal_timer(rt, 1, &tm) == 0);
#define OP(call) do { CHECK((call) == 0); ruv_signal_release(o); o = NULL; } while (0)
    OP(ruv_signal_filter(s, keep, NULL, &o));
    OP(ruv_signal_map(s, same, NULL, &o));
    OP(ruv_signal_take(s, 1, &o));
    OP(ruv_signal_skip(s, 1, &o));
    OP(ruv_signal_distinct_until_changed(s, &o));
    OP(ruv_signal_throttle(s, rt, 0.1, &o));
    OP(ruv_signal_debounce(s, rt, 0.1, &o));
    OP(ruv_signal_timeout(s, rt, 0.1, &o));
    OP(ruv_signal_delay(s, rt, 0.1, &o));
    OP(ruv_signal_deliver_on(s, rt, &o));
    OP(ruv_signal_merge(a, b, &o));
    ruv_signal_t *list[] = {a, b};
    OP(ruv_signal_merge_many(list, 2, &o));
    OP(ruv_signal_concat(a, b, &o));
    OP(ruv_signal_flatten_map(s, inner, NULL, &o));
    OP(ruv_signal_switch_to_latest(s, inner, NULL, &o));
    OP(ruv_signal_retry(s, 1, &o));
    OP(ruv_signal_catch_to(s, b, &o));
    OP(ruv_signal_take_until(s, b, &o));
    OP(ruv_signal_start_with(s, "y", 1, &o));
    OP(ruv_signal_lines(s, 0, &o));
    CHECK(ruv_buffer_append(NULL, "z", 1) == UV_EINVAL);

    ruv_subscription_t *sub = NULL;
    CHECK(ruv_signal_subscribe(s, on_next, on_error, on_done, NULL, &sub) == 0);
    CHECK(ruv_subject_send_next(subject, "v", 1) == 0);
    CHECK(ruv_subject_send_error(subject, UV_EPIPE, NULL) == 0);
    CHECK(ruv_subject_send_completed(subject) == RUV_ECLOSED);
    CHECK(ruv_subscription_is_disposed(sub) == 1);
    CHECK(ruv_subscription_dispose(sub) == 0);
    ruv_subscription_release(sub);

    CHECK(ruv_file_tail(NULL, NULL, 0, &o) < 0);
    CHECK(ruv_file_tail_ex(NULL, NULL, 0, 0, 0, &o) < 0);
    CHECK(ruv_file_lines(NULL, NULL, &o) < 0);
    CHECK(ruv_file_read(NULL, NULL, &o) < 0);
    CHECK(ruv_unix_signal_watch(NULL, 0, &o) < 0);
    CHECK(ruv_descriptor_poll(NULL, 0, RUV_POLL_READABLE, &o) < 0);
    CHECK(ruv_tcp_listen(NULL, NULL, 0, on_listening, on_connection, on_error, NULL, NULL) < 0);
    CHECK(ruv_tcp_connect(NULL, NULL, 0, on_connection, on_error, on_done, NULL, NULL) < 0);
    CHECK(ruv_connection_reads(NULL, &o) < 0);
    CHECK(ruv_connection_lines(NULL, &o) < 0);
    CHECK(ruv_connection_write(NULL, "w", 1) < 0);
    CHECK(ruv_connection_send(NULL, s, 1, on_error, on_done, NULL, NULL) < 0);
    CHECK(ruv_connection_close(NULL) < 0);
    char peer[64];
    CHECK(ruv_connection_peer(NULL, peer, sizeof peer) < 0);
    ruv_connection_release(NULL);

    ruv_signal_release(s);
    ruv_signal_release(a);
    ruv_signal_release(b);
    ruv_signal_release(n);
    ruv_signal_release(e);
    ruv_signal_release(iv);
    ruv_signal_release(tm);
    ruv_subject_release(subject);
    CHECK(ruv_runtime_close(rt) == 0);
    ruv_runtime_release(rt);
    printf("ok\n");
    return 0;
}

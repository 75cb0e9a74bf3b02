/*
 * The handles C lends to a call, let go of during that very call: `handle-lifetime <case>`
 * runs one case and prints what its callbacks saw, one line each, then "ok".
 * EmbedHandleLifetimeTests.swift builds it against reactiveuv.h and libreactiveuv.so and
 * runs each case plainly and under valgrind (memcheck): a handle freed while a call still
 * uses it shows up there as an invalid read (and under the AddressSanitizer lane, which
 * builds this program with -fsanitize=address, as a use after free).
 *
 *   subject-release   a subscriber's callback releases C's only reference to the subject
 *                     while ruv_subject_send_next() is delivering on it: the send must go on
 *                     to the other subscribers and return 0, and the subject is freed after.
 *   buffer-let-go     a map callback disposes and releases its subscription and releases
 *                     the mapped signal, C's every reference, then appends to its buffer:
 *                     the buffer belongs to ReactiveUV, which keeps it for the whole callback.
 *
 * A failed CHECK prints "FAIL ..." and exits 1.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reactiveuv.h"
#include "check.h"


static void rec_next(const void *bytes, size_t len, void *ctx) {
    printf("%s next %.*s\n", (const char *)ctx, (int)len, (const char *)bytes);
}
static void rec_completed(void *ctx) { printf("%s completed\n", (const char *)ctx); }

/* ---- subject-release ---------------------------------------------------------------- */

/* C's only reference to the subject once the signal handle is released. */
static ruv_subject_t *the_subject;

static void next_releasing_subject(const void *bytes, size_t len, void *ctx) {
    rec_next(bytes, len, ctx);
    if (len == 4 && memcmp(bytes, "last", 4) == 0 && the_subject != NULL) {
        ruv_subject_release(the_subject); /* while ruv_subject_send_next() runs on it */
        the_subject = NULL;
        printf("%s released the subject\n", (const char *)ctx);
    }
}

static void case_subject_release(void) {
    ruv_subject_t *subject = NULL;
    CHECK_RC(ruv_subject_create(0, &subject));
    the_subject = subject;
    ruv_signal_t *signal = NULL;
    CHECK_RC(ruv_subject_signal(subject, &signal));
    ruv_subscription_t *a = NULL, *b = NULL;
    CHECK_RC(ruv_signal_subscribe(signal, next_releasing_subject, NULL, rec_completed, "a", &a));
    CHECK_RC(ruv_signal_subscribe(signal, rec_next, NULL, rec_completed, "b", &b));
    /* The subscriptions hold the subject's subscriber list, not the subject: from here on
       the subject handle is the subject's only owner. */
    ruv_signal_release(signal);
    CHECK_RC(ruv_subject_send_next(subject, "one", 3));
    int rc = ruv_subject_send_next(subject, "last", 4);
    printf("send returned %d\n", rc);
    CHECK(the_subject == NULL);
    /* The subscriptions outlive the subject; ending them now finds nothing to leave. */
    CHECK_RC(ruv_subscription_dispose(a));
    CHECK_RC(ruv_subscription_dispose(b));
    ruv_subscription_release(a);
    ruv_subscription_release(b);
}

/* ---- buffer-let-go ------------------------------------------------------------------ */

static ruv_subscription_t *mapped_subscription;
static ruv_signal_t *mapped_signal;

static int map_letting_go(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx) {
    (void)ctx;
    printf("map got %.*s\n", (int)len, (const char *)bytes);
    CHECK_RC(ruv_subscription_dispose(mapped_subscription));
    ruv_subscription_release(mapped_subscription);
    mapped_subscription = NULL;
    ruv_signal_release(mapped_signal);
    mapped_signal = NULL;
    printf("map appended: %d\n", ruv_buffer_append(out, "kept", 4));
    return 0;
}

static void case_buffer_let_go(void) {
    ruv_subject_t *subject = NULL;
    CHECK_RC(ruv_subject_create(0, &subject));
    ruv_signal_t *signal = NULL;
    CHECK_RC(ruv_subject_signal(subject, &signal));
    CHECK_RC(ruv_signal_map(signal, map_letting_go, NULL, &mapped_signal));
    ruv_signal_release(signal);
    CHECK_RC(ruv_signal_subscribe(mapped_signal, rec_next, NULL, rec_completed, "mapped", &mapped_subscription));
    printf("send returned %d\n", ruv_subject_send_next(subject, "v", 1));
    CHECK(mapped_subscription == NULL && mapped_signal == NULL);
    /* Nothing is subscribed any more: a second value reaches no callback. */
    printf("send returned %d\n", ruv_subject_send_next(subject, "w", 1));
    ruv_subject_release(subject);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s subject-release|buffer-let-go\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "subject-release") == 0) case_subject_release();
    else if (strcmp(argv[1], "buffer-let-go") == 0) case_buffer_let_go();
    else {
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
    }
    printf("ok\n");
    fflush(stdout);
    return 0;
}

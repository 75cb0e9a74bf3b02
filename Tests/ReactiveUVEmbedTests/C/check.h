/*
 * The checks every C test program here uses. A failed check prints "FAIL file:line: ..."
 * on stdout (the Swift test shows the program's output) and exits 1 at once: a program that
 * went wrong must not go on into a callback whose state is no longer what it expects.
 * stdout is flushed first because it is a pipe to the test, so fully buffered.
 */
#ifndef REACTIVEUV_TEST_CHECK_H
#define REACTIVEUV_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "reactiveuv.h"

/* `cond` must hold. */
#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                         \
            fflush(stdout);                                                                \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* `a` must equal `b` (as integers); a negative `a` is also named as a ReactiveUV error. */
#define CHECK_EQ(a, b)                                                                     \
    do {                                                                                   \
        long long va_ = (long long)(a), vb_ = (long long)(b);                              \
        if (va_ != vb_) {                                                                  \
            printf("FAIL %s:%d: %s == %lld, expected %lld (%s)\n", __FILE__, __LINE__, #a, \
                   va_, vb_, va_ < 0 ? ruv_err_name((int)va_) : "");                       \
            fflush(stdout);                                                                \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* A ReactiveUV call must return 0; otherwise its error is printed by name. */
#define CHECK_RC(expr) CHECK_EQ((expr), 0)

#endif

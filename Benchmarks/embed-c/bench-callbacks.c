/*
 * bench-callbacks: the per-value cost of a pipeline of C callbacks run by ReactiveUV.
 *
 *   bench-callbacks [VALUES] [RUNS]
 *
 * Sends VALUES 16-byte values through each stage, RUNS times, and prints the median
 * nanoseconds per value:
 *
 *   c-direct   the three C functions called directly (the work itself, no ReactiveUV)
 *   subject    ruv_subject_send_next -> subscriber's next callback
 *   pipeline   ruv_subject_send_next -> filter(C) -> map(C) -> next callback
 *
 * EmbedBenchmarkTests runs the same pipeline subscribed in Swift for comparison (see
 * Benchmarks/embed-c/README.md for the command and the numbers).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reactiveuv.h"

static unsigned long long checksum;

/* The filter keeps values whose first byte is not 'x' (all of ours). */
static int keep(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    return len > 0 && ((const unsigned char *)bytes)[0] != 'x';
}
/* The map upper-cases the first byte. */
static int upper_first(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx) {
    (void)ctx;
    unsigned char first = (unsigned char)(((const unsigned char *)bytes)[0] & ~0x20);
    ruv_buffer_append(out, &first, 1);
    ruv_buffer_append(out, (const unsigned char *)bytes + 1, len - 1);
    return 0;
}
static void sink(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    checksum += len + ((const unsigned char *)bytes)[0];
}

/* CPU time of the process: the machine is shared, and wall time would count other
   programs' turns on the processor as ours. */
static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare);
    return v[n / 2];
}

int main(int argc, char **argv) {
    long values = argc > 1 ? atol(argv[1]) : 1000000;
    int runs = argc > 2 ? atoi(argv[2]) : 7;
    if (runs > 64) runs = 64;
    unsigned char value[16];
    memcpy(value, "abcdefghijklmnop", 16);
    double direct[64], subject_only[64], pipeline[64];

    for (int r = 0; r < runs; r++) {
        /* c-direct: what the callbacks cost with no ReactiveUV in between. */
        double t0 = now_ns();
        unsigned char out[16];
        for (long i = 0; i < values; i++) {
            value[15] = (unsigned char)i;
            if (keep(value, 16, NULL)) {
                out[0] = (unsigned char)(value[0] & ~0x20);
                memcpy(out + 1, value + 1, 15);
                sink(out, 16, NULL);
            }
        }
        direct[r] = (now_ns() - t0) / (double)values;

        ruv_subject_t *subject = NULL;
        ruv_signal_t *source = NULL, *filtered = NULL, *mapped = NULL;
        ruv_subscription_t *sub = NULL;
        ruv_subject_create(0, &subject);
        ruv_subject_signal(subject, &source);

        ruv_signal_subscribe(source, sink, NULL, NULL, NULL, &sub);
        t0 = now_ns();
        for (long i = 0; i < values; i++) {
            value[15] = (unsigned char)i;
            ruv_subject_send_next(subject, value, 16);
        }
        subject_only[r] = (now_ns() - t0) / (double)values;
        ruv_subscription_dispose(sub);
        ruv_subscription_release(sub);

        ruv_signal_filter(source, keep, NULL, &filtered);
        ruv_signal_map(filtered, upper_first, NULL, &mapped);
        ruv_signal_subscribe(mapped, sink, NULL, NULL, NULL, &sub);
        t0 = now_ns();
        for (long i = 0; i < values; i++) {
            value[15] = (unsigned char)i;
            ruv_subject_send_next(subject, value, 16);
        }
        pipeline[r] = (now_ns() - t0) / (double)values;
        ruv_subscription_dispose(sub);
        ruv_subscription_release(sub);
        ruv_signal_release(mapped);
        ruv_signal_release(filtered);
        ruv_signal_release(source);
        ruv_subject_release(subject);
    }
    printf("c-direct %.1f ns/value\n", median(direct, runs));
    printf("subject %.1f ns/value\n", median(subject_only, runs));
    printf("pipeline %.1f ns/value\n", median(pipeline, runs));
    printf("checksum %llu\n", checksum);
    return 0;
}

#include "LogcastScan.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Where matches of the line being scanned go.
typedef struct {
    uint32_t *pairs;
    size_t capacity;
    size_t used;
    uint32_t line;
    int overflow;
} lcs_sink;

static int lcs_on_match(unsigned int id, unsigned long long from, unsigned long long to,
                        unsigned int flags, void *context) {
    (void)from; (void)to; (void)flags;
    lcs_sink *sink = context;
    if (sink->used >= sink->capacity) {
        sink->overflow = 1;
        return 1;  // stop: the caller grows the array and rescans this line
    }
    sink->pairs[2 * sink->used] = sink->line;
    sink->pairs[2 * sink->used + 1] = id;
    sink->used += 1;
    return 0;
}

int lcs_scan_lines(const hs_database_t *db, hs_scratch_t *scratch, const uint8_t *base,
                   const uint32_t *starts, const uint32_t *ends, size_t first, size_t count,
                   uint32_t *pairs, size_t capacity_pairs, size_t *used_pairs, size_t *next_line) {
    lcs_sink sink = { pairs, capacity_pairs, *used_pairs, 0, 0 };
    for (size_t i = first; i < count; i++) {
        size_t before = sink.used;
        sink.line = (uint32_t)i;
        hs_error_t rc = hs_scan(db, (const char *)base + starts[i], ends[i] - starts[i], 0, scratch,
                                lcs_on_match, &sink);
        if (sink.overflow) {
            sink.used = before;
            *used_pairs = sink.used;
            *next_line = i;
            return 1;
        }
        if (rc != HS_SUCCESS) {
            *used_pairs = sink.used;
            *next_line = i;
            return rc;
        }
    }
    *used_pairs = sink.used;
    *next_line = count;
    return 0;
}

// MARK: - The helper thread

struct lcs_helper {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int state;  // 0 idle, 1 job waiting or running, 2 done
    const hs_database_t *db;
    hs_scratch_t *scratch;
    const uint8_t *base;
    const uint32_t *starts;
    const uint32_t *ends;
    size_t first, count;
    uint32_t *pairs;
    size_t capacity;
    size_t used, next;
    int result;
};

static void *lcs_helper_main(void *arg) {
    lcs_helper *h = arg;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (h->state != 1) pthread_cond_wait(&h->changed, &h->lock);
        pthread_mutex_unlock(&h->lock);
        size_t used = 0, next = h->first;
        int rc = lcs_scan_lines(h->db, h->scratch, h->base, h->starts, h->ends, h->first, h->count,
                                h->pairs, h->capacity, &used, &next);
        pthread_mutex_lock(&h->lock);
        h->used = used;
        h->next = next;
        h->result = rc;
        h->state = 2;
        pthread_cond_broadcast(&h->changed);
    }
    return NULL;
}

lcs_helper *lcs_helper_start(void) {
    lcs_helper *h = calloc(1, sizeof(lcs_helper));
    if (h == NULL) return NULL;
    if (pthread_mutex_init(&h->lock, NULL) != 0) { free(h); return NULL; }
    if (pthread_cond_init(&h->changed, NULL) != 0) { pthread_mutex_destroy(&h->lock); free(h); return NULL; }
    pthread_t thread;
    if (pthread_create(&thread, NULL, lcs_helper_main, h) != 0) {
        pthread_cond_destroy(&h->changed);
        pthread_mutex_destroy(&h->lock);
        free(h);
        return NULL;
    }
    // It lives as long as the process (one per daemon).
    pthread_detach(thread);
    return h;
}

void lcs_helper_submit(lcs_helper *h, const hs_database_t *db, hs_scratch_t *scratch, const uint8_t *base,
                       const uint32_t *starts, const uint32_t *ends, size_t first, size_t count,
                       uint32_t *pairs, size_t capacity_pairs) {
    pthread_mutex_lock(&h->lock);
    h->db = db;
    h->scratch = scratch;
    h->base = base;
    h->starts = starts;
    h->ends = ends;
    h->first = first;
    h->count = count;
    h->pairs = pairs;
    h->capacity = capacity_pairs;
    h->state = 1;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

int lcs_helper_wait(lcs_helper *h, size_t *used_pairs, size_t *next_line) {
    pthread_mutex_lock(&h->lock);
    while (h->state != 2) pthread_cond_wait(&h->changed, &h->lock);
    h->state = 0;
    *used_pairs = h->used;
    *next_line = h->next;
    int rc = h->result;
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int lcs_platform_ok(void) { return hs_valid_platform() == HS_SUCCESS; }

int lcs_thread_set_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}

int lcs_keep_freed_memory(int mmap_threshold, int trim_threshold) {
    // Setting the thresholds also turns off glibc's dynamic adjustment of them.
    if (mallopt(M_MMAP_THRESHOLD, mmap_threshold) != 1) return -1;
    if (mallopt(M_TRIM_THRESHOLD, trim_threshold) != 1) return -1;
    return 0;
}

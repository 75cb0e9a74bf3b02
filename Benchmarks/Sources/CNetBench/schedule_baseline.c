// Raw libuv baselines for the scheduling rows: what "run this block on that loop" costs
// with libuv alone.
#include "CNetBench.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <uv.h>

static uint64_t cnb__clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// MARK: - A queue drained by uv_async_t

typedef struct {
    void (*fn)(void *);
    void *ctx;
} cnb__item_t;

typedef struct {
    pthread_mutex_t lock;
    cnb__item_t *items;   // guarded by lock
    size_t count, capacity;
    cnb__item_t *batch;   // loop thread only: the swapped-out batch
    size_t batch_capacity;
    uv_async_t async;
    int64_t ran;          // loop thread only
    int64_t target;
} cnb__queue_t;

static void cnb__enqueue(cnb__queue_t *q, void (*fn)(void *), void *ctx) {
    pthread_mutex_lock(&q->lock);
    if (q->count == q->capacity) {
        q->capacity = q->capacity ? q->capacity * 2 : 1024;
        q->items = realloc(q->items, q->capacity * sizeof *q->items);
    }
    int was_empty = q->count == 0;
    q->items[q->count++] = (cnb__item_t){fn, ctx};
    // One wake-up per batch, as ReactiveUV's EventLoop does.
    if (was_empty) uv_async_send(&q->async);
    pthread_mutex_unlock(&q->lock);
}

static void cnb__drain(uv_async_t *async) {
    cnb__queue_t *q = async->data;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        cnb__item_t *items = q->items;
        size_t count = q->count, capacity = q->capacity;
        q->items = q->batch;
        q->capacity = q->batch_capacity;
        q->count = 0;
        pthread_mutex_unlock(&q->lock);
        q->batch = items;
        q->batch_capacity = capacity;
        if (count == 0) break;
        for (size_t i = 0; i < count; i++) items[i].fn(items[i].ctx);
    }
    if (q->ran >= q->target) uv_stop(async->loop);
}

static void cnb__count(void *ctx) { ((cnb__queue_t *)ctx)->ran++; }

static void *cnb__producer(void *arg) {
    cnb__queue_t *q = arg;
    for (int64_t i = 0; i < q->target; i++) cnb__enqueue(q, cnb__count, q);
    return NULL;
}

int64_t cnb_async_queue_run(int64_t n, int from_other_thread) {
    uv_loop_t loop;
    int rc = uv_loop_init(&loop);
    if (rc < 0) return rc;
    cnb__queue_t q = {0};
    pthread_mutex_init(&q.lock, NULL);
    q.target = n;
    uv_async_init(&loop, &q.async, cnb__drain);
    q.async.data = &q;

    uint64_t start = cnb__clock();
    pthread_t thread;
    if (from_other_thread) {
        pthread_create(&thread, NULL, cnb__producer, &q);
    } else {
        for (int64_t i = 0; i < n; i++) cnb__enqueue(&q, cnb__count, &q);
    }
    while (q.ran < n) uv_run(&loop, UV_RUN_DEFAULT);
    uint64_t end = cnb__clock();
    if (from_other_thread) pthread_join(thread, NULL);

    uv_close((uv_handle_t *)&q.async, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    pthread_mutex_destroy(&q.lock);
    free(q.items);
    free(q.batch);
    return q.ran == n ? (int64_t)(end - start) : -1;
}

// MARK: - One uv_timer_t per block

static void cnb__timer_closed(uv_handle_t *handle) { free(handle); }

static void cnb__timer_fired(uv_timer_t *timer) {
    (*(int64_t *)timer->loop->data)++;
    uv_close((uv_handle_t *)timer, cnb__timer_closed);
}

int64_t cnb_timer_run(int64_t n) {
    uv_loop_t loop;
    int rc = uv_loop_init(&loop);
    if (rc < 0) return rc;
    int64_t ran = 0;
    loop.data = &ran;
    uint64_t start = cnb__clock();
    uv_update_time(&loop);
    for (int64_t i = 0; i < n; i++) {
        uv_timer_t *timer = malloc(sizeof *timer);
        uv_timer_init(&loop, timer);
        uv_timer_start(timer, cnb__timer_fired, 0, 0);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uint64_t end = cnb__clock();
    uv_loop_close(&loop);
    return ran == n ? (int64_t)(end - start) : -1;
}

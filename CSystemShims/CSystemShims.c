// The out-of-line half of CSystemShims: pthread locks and conditions, thread identity, the
// monotonic clock and the no-wait read. See CSystemShims.h for why each exists.
#define _GNU_SOURCE
#include "CSystemShims.h"

#include <errno.h>
#include <pthread.h>
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

csys_atomic_int csys__placeholder_cell = {0};

struct csys_mutex {
    pthread_mutex_t mutex;
};

struct csys_cond {
    pthread_cond_t cond;
};

static void csys__check(int rc, const char *what) {
    if (rc != 0) {
        // A failing pthread call on a valid object means memory corruption: nothing sane remains.
        fprintf(stderr, "CSystemShims: %s failed (%d)\n", what, rc);
        abort();
    }
}

csys_mutex *csys_mutex_create(bool recursive) {
    csys_mutex *m = malloc(sizeof(*m));
    if (m == NULL) abort();
    pthread_mutexattr_t attr;
    csys__check(pthread_mutexattr_init(&attr), "pthread_mutexattr_init");
    csys__check(pthread_mutexattr_settype(&attr, recursive ? PTHREAD_MUTEX_RECURSIVE : PTHREAD_MUTEX_NORMAL),
                "pthread_mutexattr_settype");
    csys__check(pthread_mutex_init(&m->mutex, &attr), "pthread_mutex_init");
    pthread_mutexattr_destroy(&attr);
    return m;
}

void csys_mutex_destroy(csys_mutex *mutex) {
    if (mutex == NULL) return;
    pthread_mutex_destroy(&mutex->mutex);
    free(mutex);
}

void csys_mutex_lock(csys_mutex *mutex) { csys__check(pthread_mutex_lock(&mutex->mutex), "pthread_mutex_lock"); }

bool csys_mutex_trylock(csys_mutex *mutex) { return pthread_mutex_trylock(&mutex->mutex) == 0; }

void csys_mutex_unlock(csys_mutex *mutex) {
    csys__check(pthread_mutex_unlock(&mutex->mutex), "pthread_mutex_unlock");
}

csys_cond *csys_cond_create(void) {
    csys_cond *c = malloc(sizeof(*c));
    if (c == NULL) abort();
    pthread_condattr_t attr;
    csys__check(pthread_condattr_init(&attr), "pthread_condattr_init");
    csys__check(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), "pthread_condattr_setclock");
    csys__check(pthread_cond_init(&c->cond, &attr), "pthread_cond_init");
    pthread_condattr_destroy(&attr);
    return c;
}

void csys_cond_destroy(csys_cond *cond) {
    if (cond == NULL) return;
    pthread_cond_destroy(&cond->cond);
    free(cond);
}

void csys_cond_wait(csys_cond *cond, csys_mutex *mutex) {
    csys__check(pthread_cond_wait(&cond->cond, &mutex->mutex), "pthread_cond_wait");
}

bool csys_cond_timedwait(csys_cond *cond, csys_mutex *mutex, uint64_t timeout_ns) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    uint64_t ns = (uint64_t)deadline.tv_nsec + timeout_ns % 1000000000ull;
    deadline.tv_sec += (time_t)(timeout_ns / 1000000000ull + ns / 1000000000ull);
    deadline.tv_nsec = (long)(ns % 1000000000ull);
    int rc = pthread_cond_timedwait(&cond->cond, &mutex->mutex, &deadline);
    return rc == 0;
}

void csys_cond_signal(csys_cond *cond) { pthread_cond_signal(&cond->cond); }

void csys_cond_broadcast(csys_cond *cond) { pthread_cond_broadcast(&cond->cond); }

// MARK: - Live-subscription slots (see csys_live_slot in the header)

_Thread_local csys_live_slot *csys__live_slot __attribute__((tls_model("initial-exec"))) = NULL;

static pthread_mutex_t csys__live_mutex = PTHREAD_MUTEX_INITIALIZER;
static csys_live_slot *csys__live_slots = NULL;
static pthread_key_t csys__live_key;
static pthread_once_t csys__live_once = PTHREAD_ONCE_INIT;

// At thread exit: the slot goes back to the pool with its count, which stays in the sum.
// The mutex orders the exiting thread's last store before the next owner's first load.
static void csys__live_slot_release(void *value) {
    csys_live_slot *slot = value;
    pthread_mutex_lock(&csys__live_mutex);
    slot->owned = false;
    pthread_mutex_unlock(&csys__live_mutex);
    csys__live_slot = NULL;
}

static void csys__live_key_create(void) {
    csys__check(pthread_key_create(&csys__live_key, csys__live_slot_release), "pthread_key_create");
}

csys_live_slot *csys__live_slot_claim(void) {
    pthread_once(&csys__live_once, csys__live_key_create);
    pthread_mutex_lock(&csys__live_mutex);
    csys_live_slot *slot = csys__live_slots;
    while (slot != NULL && slot->owned) slot = slot->next;
    if (slot == NULL) {
        slot = calloc(1, sizeof(*slot));
        if (slot == NULL) abort();
        slot->next = csys__live_slots;
        csys__live_slots = slot;
    }
    slot->owned = true;
    pthread_mutex_unlock(&csys__live_mutex);
    // A thread whose other exit destructors free subscriptions after ours ran claims again;
    // setting the key again makes pthreads run this destructor once more.
    csys__check(pthread_setspecific(csys__live_key, slot), "pthread_setspecific");
    csys__live_slot = slot;
    return slot;
}

int64_t csys_live_subscriptions_count(void) {
    int64_t sum = 0;
    pthread_mutex_lock(&csys__live_mutex);
    for (csys_live_slot *slot = csys__live_slots; slot != NULL; slot = slot->next) {
        sum += atomic_load_explicit((_Atomic(int64_t) *)&slot->count, memory_order_relaxed);
    }
    pthread_mutex_unlock(&csys__live_mutex);
    return sum;
}

int64_t csys_live_slots_allocated(void) {
    int64_t n = 0;
    pthread_mutex_lock(&csys__live_mutex);
    for (csys_live_slot *slot = csys__live_slots; slot != NULL; slot = slot->next) n += 1;
    pthread_mutex_unlock(&csys__live_mutex);
    return n;
}

static _Thread_local int64_t csys__cached_tid = 0;

int64_t csys_thread_id(void) {
    // gettid is a system call; the id never changes for a thread, so cache it.
    if (csys__cached_tid == 0) csys__cached_tid = (int64_t)syscall(SYS_gettid);
    return csys__cached_tid;
}

bool csys_thread_is_main(void) { return csys_thread_id() == (int64_t)getpid(); }

void csys_thread_yield(void) { sched_yield(); }

int csys_thread_set_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)csys_thread_id(), nice) == 0 ? 0 : -errno;
}

int csys_thread_nice(void) { return getpriority(PRIO_PROCESS, (id_t)csys_thread_id()); }

uint64_t csys_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long csys_pread_nowait(int fd, void *buffer, size_t count, int64_t offset) {
    struct iovec vector = { .iov_base = buffer, .iov_len = count };
    ssize_t n;
    do {
        n = preadv2(fd, &vector, 1, (off_t)offset, RWF_NOWAIT);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -(long)errno : (long)n;
}

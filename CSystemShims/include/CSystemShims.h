// CSystemShims: the few system primitives ReactiveUV needs from C.
//
// Why this exists: Swift on Linux has no portable, Foundation-free way to reach C11
// <stdatomic.h> with explicit memory orders, pthread mutexes and conditions, the kernel's
// thread id, the monotonic clock, or `preadv2` (glibc declares it only under _GNU_SOURCE,
// which Swift's Glibc module does not see). Everything here is one of those, with the
// `csys_` prefix. Nothing else belongs here.
//
// Atomics are `static inline` so that Swift imports and inlines them: a fetch-add from
// Swift compiles to a single locked instruction, with no call. Their storage structs are
// plain integers in the header (Swift cannot import `_Atomic` fields); the functions cast
// to the atomic type. Storage must live at a stable address (heap memory), never in a
// Swift stored property passed with `&`.
#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Memory orders

/// Memory orders, mirroring C11's `memory_order` (kept as our own enum so Swift sees names).
typedef enum csys_memory_order {
    csys_relaxed = 0,
    csys_acquire = 1,
    csys_release = 2,
    csys_acq_rel = 3,
    csys_seq_cst = 4,
} csys_memory_order;

static inline memory_order csys__order(csys_memory_order order) {
    switch (order) {
    case csys_relaxed: return memory_order_relaxed;
    case csys_acquire: return memory_order_acquire;
    case csys_release: return memory_order_release;
    case csys_acq_rel: return memory_order_acq_rel;
    default: return memory_order_seq_cst;
    }
}

/// Loads may not use release orders; stores may not use acquire orders (C11 rules).
static inline memory_order csys__load_order(csys_memory_order order) {
    memory_order o = csys__order(order);
    return (o == memory_order_release || o == memory_order_acq_rel) ? memory_order_acquire : o;
}
static inline memory_order csys__store_order(csys_memory_order order) {
    memory_order o = csys__order(order);
    return (o == memory_order_acquire || o == memory_order_acq_rel) ? memory_order_release : o;
}
/// The failure order of a compare-exchange may be neither release nor stronger than success.
static inline memory_order csys__failure_order(csys_memory_order order) {
    switch (order) {
    case csys_relaxed: case csys_release: return memory_order_relaxed;
    case csys_acquire: case csys_acq_rel: return memory_order_acquire;
    default: return memory_order_seq_cst;
    }
}

// MARK: - Atomic integers (64-bit)

/// Storage for an atomic 64-bit integer. Use only through the `csys_atomic_int_*` functions.
typedef struct csys_atomic_int { int64_t value; } csys_atomic_int;

static inline _Atomic(int64_t) *csys__int(csys_atomic_int *a) { return (_Atomic(int64_t) *)&a->value; }

/// One process-wide cell that is never written: a placeholder for objects whose state
/// lives elsewhere, so they need not allocate a cell of their own (ReactiveUV's scheduled
/// block disposables). Defined in CSystemShims.c.
extern csys_atomic_int csys__placeholder_cell;

/// The placeholder cell's address (constant for the process).
static inline csys_atomic_int *csys_atomic_int_placeholder(void) { return &csys__placeholder_cell; }

/// One thread's share of the process-wide count of live subscriber objects (ReactiveUV's
/// `Diagnostics`). Every subscription is counted when it is made and when it goes away, so
/// one shared atomic counter cost each subscribe/dispose cycle two locked instructions
/// (about 16 ns of a 200 ns cycle on the 2-core VM). Instead each thread adds to a slot
/// of its own with a plain load and store (only the owner writes a slot, so no locked
/// instruction), and a read sums the slots. A subscription made on one thread and freed
/// on another leaves +1 in one slot and -1 in the other: the sum is still right.
/// Slots are never freed: a thread that exits hands its slot (and its net count) to the
/// next thread that needs one, so there are at most as many slots as threads alive at once.
typedef struct csys_live_slot {
    int64_t count;
    struct csys_live_slot *next;
    bool owned;
} csys_live_slot;

/// This thread's slot, `NULL` until it first counts (initial-exec: one `%fs`-relative load).
extern _Thread_local csys_live_slot *csys__live_slot __attribute__((tls_model("initial-exec")));

/// Takes a free slot (or makes one) for this thread and registers its hand-back at thread
/// exit. Out of line: runs once per thread. Defined in CSystemShims.c.
csys_live_slot *csys__live_slot_claim(void);

/// Adds `delta` to the live-subscription count: a plain load and store on this thread's slot.
static inline void csys_live_subscriptions_add(int64_t delta) {
    csys_live_slot *slot = csys__live_slot;
    if (__builtin_expect(slot == NULL, 0)) slot = csys__live_slot_claim();
    _Atomic(int64_t) *count = (_Atomic(int64_t) *)&slot->count;
    atomic_store_explicit(count, atomic_load_explicit(count, memory_order_relaxed) + delta, memory_order_relaxed);
}

/// The live-subscription count: the sum of every slot (exact once the threads that made
/// and freed subscriptions have synchronized with the reader). Defined in CSystemShims.c.
int64_t csys_live_subscriptions_count(void);

/// How many slots exist (for tests: threads that exit hand theirs back, so this stays at
/// the most threads ever counting at once). Defined in CSystemShims.c.
int64_t csys_live_slots_allocated(void);

/// Initializes the storage (not atomic; before it is shared).
static inline void csys_atomic_int_init(csys_atomic_int *a, int64_t value) {
    atomic_init(csys__int(a), value);
}
/// Atomically loads the value.
static inline int64_t csys_atomic_int_load(csys_atomic_int *a, csys_memory_order order) {
    return atomic_load_explicit(csys__int(a), csys__load_order(order));
}
/// Atomically stores a value.
static inline void csys_atomic_int_store(csys_atomic_int *a, int64_t value, csys_memory_order order) {
    atomic_store_explicit(csys__int(a), value, csys__store_order(order));
}
/// Atomically replaces the value, returning the old one.
static inline int64_t csys_atomic_int_exchange(csys_atomic_int *a, int64_t value, csys_memory_order order) {
    return atomic_exchange_explicit(csys__int(a), value, csys__order(order));
}
/// Atomically adds `delta`, returning the old value.
static inline int64_t csys_atomic_int_fetch_add(csys_atomic_int *a, int64_t delta, csys_memory_order order) {
    return atomic_fetch_add_explicit(csys__int(a), delta, csys__order(order));
}
/// Atomically subtracts `delta`, returning the old value.
static inline int64_t csys_atomic_int_fetch_sub(csys_atomic_int *a, int64_t delta, csys_memory_order order) {
    return atomic_fetch_sub_explicit(csys__int(a), delta, csys__order(order));
}
/// Atomically ORs `bits` in, returning the old value.
static inline int64_t csys_atomic_int_fetch_or(csys_atomic_int *a, int64_t bits, csys_memory_order order) {
    return atomic_fetch_or_explicit(csys__int(a), bits, csys__order(order));
}
/// Atomically ANDs `bits` in, returning the old value.
static inline int64_t csys_atomic_int_fetch_and(csys_atomic_int *a, int64_t bits, csys_memory_order order) {
    return atomic_fetch_and_explicit(csys__int(a), bits, csys__order(order));
}
/// Strong compare-exchange: if the value equals `*expected`, stores `desired` and returns
/// true; otherwise writes the current value to `*expected` and returns false.
static inline bool csys_atomic_int_compare_exchange(csys_atomic_int *a, int64_t *expected, int64_t desired,
                                                    csys_memory_order order) {
    return atomic_compare_exchange_strong_explicit(csys__int(a), expected, desired, csys__order(order),
                                                   csys__failure_order(order));
}

// MARK: - Atomic booleans

/// Storage for an atomic boolean. Use only through the `csys_atomic_bool_*` functions.
typedef struct csys_atomic_bool { bool value; } csys_atomic_bool;

static inline _Atomic(bool) *csys__bool(csys_atomic_bool *a) { return (_Atomic(bool) *)&a->value; }

/// Initializes the storage (not atomic; before it is shared).
static inline void csys_atomic_bool_init(csys_atomic_bool *a, bool value) { atomic_init(csys__bool(a), value); }
/// Atomically loads the value.
static inline bool csys_atomic_bool_load(csys_atomic_bool *a, csys_memory_order order) {
    return atomic_load_explicit(csys__bool(a), csys__load_order(order));
}
/// Atomically stores a value.
static inline void csys_atomic_bool_store(csys_atomic_bool *a, bool value, csys_memory_order order) {
    atomic_store_explicit(csys__bool(a), value, csys__store_order(order));
}
/// Atomically replaces the value, returning the old one.
static inline bool csys_atomic_bool_exchange(csys_atomic_bool *a, bool value, csys_memory_order order) {
    return atomic_exchange_explicit(csys__bool(a), value, csys__order(order));
}
/// Strong compare-exchange (see `csys_atomic_int_compare_exchange`).
static inline bool csys_atomic_bool_compare_exchange(csys_atomic_bool *a, bool *expected, bool desired,
                                                     csys_memory_order order) {
    return atomic_compare_exchange_strong_explicit(csys__bool(a), expected, desired, csys__order(order),
                                                   csys__failure_order(order));
}

// MARK: - Atomic pointers

/// Storage for an atomic pointer. Use only through the `csys_atomic_ptr_*` functions.
typedef struct csys_atomic_ptr { void *value; } csys_atomic_ptr;

static inline _Atomic(void *) *csys__ptr(csys_atomic_ptr *a) { return (_Atomic(void *) *)&a->value; }

/// Initializes the storage (not atomic; before it is shared).
static inline void csys_atomic_ptr_init(csys_atomic_ptr *a, void *value) { atomic_init(csys__ptr(a), value); }
/// Atomically loads the pointer.
static inline void *csys_atomic_ptr_load(csys_atomic_ptr *a, csys_memory_order order) {
    return atomic_load_explicit(csys__ptr(a), csys__load_order(order));
}
/// Atomically stores a pointer.
static inline void csys_atomic_ptr_store(csys_atomic_ptr *a, void *value, csys_memory_order order) {
    atomic_store_explicit(csys__ptr(a), value, csys__store_order(order));
}
/// Atomically replaces the pointer, returning the old one.
static inline void *csys_atomic_ptr_exchange(csys_atomic_ptr *a, void *value, csys_memory_order order) {
    return atomic_exchange_explicit(csys__ptr(a), value, csys__order(order));
}
/// Strong compare-exchange (see `csys_atomic_int_compare_exchange`).
static inline bool csys_atomic_ptr_compare_exchange(csys_atomic_ptr *a, void **expected, void *desired,
                                                    csys_memory_order order) {
    return atomic_compare_exchange_strong_explicit(csys__ptr(a), expected, desired, csys__order(order),
                                                   csys__failure_order(order));
}

/// A full memory fence with the given order.
static inline void csys_atomic_thread_fence(csys_memory_order order) { atomic_thread_fence(csys__order(order)); }

// MARK: - Locks and conditions

/// A mutex (pthread). Opaque; create with `csys_mutex_create`, free with `csys_mutex_destroy`.
typedef struct csys_mutex csys_mutex;

/// Creates a mutex; `recursive` makes it re-entrant for its owning thread (RAC's
/// `@synchronized` is recursive). Never returns NULL (aborts on out-of-memory).
csys_mutex *csys_mutex_create(bool recursive);
/// Destroys a mutex that no thread holds.
void csys_mutex_destroy(csys_mutex *mutex);
/// Acquires the mutex, blocking.
void csys_mutex_lock(csys_mutex *mutex);
/// Tries to acquire the mutex without blocking; true when acquired.
bool csys_mutex_trylock(csys_mutex *mutex);
/// Releases the mutex.
void csys_mutex_unlock(csys_mutex *mutex);

/// A condition variable on the monotonic clock. Opaque; `csys_cond_create`/`csys_cond_destroy`.
typedef struct csys_cond csys_cond;

/// Creates a condition variable whose timed waits use CLOCK_MONOTONIC.
csys_cond *csys_cond_create(void);
/// Destroys a condition variable nobody waits on.
void csys_cond_destroy(csys_cond *cond);
/// Waits (the mutex must be held, non-recursively).
void csys_cond_wait(csys_cond *cond, csys_mutex *mutex);
/// Waits at most `timeout_ns` nanoseconds; returns false when the time ran out.
bool csys_cond_timedwait(csys_cond *cond, csys_mutex *mutex, uint64_t timeout_ns);
/// Wakes one waiter.
void csys_cond_signal(csys_cond *cond);
/// Wakes every waiter.
void csys_cond_broadcast(csys_cond *cond);

// MARK: - Threads and time

/// A token unique to the calling thread among live threads, never 0, read in one
/// instruction (the thread pointer). For hot paths that only compare "same thread?":
/// re-entrant locks and the subscriber's delivery gate. Use `csys_thread_id` for the kernel id.
static inline uintptr_t csys_thread_token(void) {
#if defined(__x86_64__)
    uintptr_t tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    return tp;
#elif defined(__aarch64__)
    uintptr_t tp;
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
#else
    extern unsigned long pthread_self(void);
    return (uintptr_t)pthread_self();
#endif
}

/// The calling thread's kernel id (gettid), cached per thread.
int64_t csys_thread_id(void);
/// True on the process's main thread (the thread whose id is the process id).
bool csys_thread_is_main(void);
/// Yields the processor (sched_yield).
void csys_thread_yield(void);
/// Sets the calling thread's nice value (Linux schedules threads by their own nice value,
/// `setpriority(PRIO_PROCESS, gettid(), nice)`): how background schedulers' priorities
/// reach the kernel. Raising it is always allowed; lowering it below the current value needs
/// CAP_SYS_NICE. Returns 0, or a negative errno (-EPERM, -EACCES).
int csys_thread_set_nice(int nice);
/// The calling thread's nice value (-20 to 19).
int csys_thread_nice(void);
/// Monotonic time in nanoseconds (CLOCK_MONOTONIC).
uint64_t csys_monotonic_ns(void);

// MARK: - Files

/// `pread` that never waits for storage: `preadv2` with `RWF_NOWAIT` (Linux 4.14), retried
/// on EINTR. Copies what is already in the page cache and returns the byte count (fewer than
/// `count` when only part is cached, 0 at end of file); returns `-EAGAIN` when nothing asked
/// for is cached, `-EOPNOTSUPP` (or `-ENOSYS`, `-EINVAL` on old kernels) when the file
/// system cannot promise not to wait, and `-errno` for other failures. It lets a libuv loop
/// thread read data that is already in memory without handing the read to the thread pool,
/// and without ever blocking on a disk or a network file system.
long csys_pread_nowait(int fd, void *buffer, size_t count, int64_t offset);

#ifdef __cplusplus
}
#endif

#endif // CSYSTEMSHIMS_H

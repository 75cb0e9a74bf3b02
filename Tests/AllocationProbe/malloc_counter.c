/*
 * A malloc counter to preload (LD_PRELOAD) into a program whose heap allocations are
 * counted: ruv-alloc-probe (AllocationCountTests) and ruv-bench (`make bench-allocs`).
 *
 * Why a preloaded object and not a counter inside the test bundle: defining malloc in a
 * test bundle would fight the sanitizers, which interpose malloc themselves (the
 * `make sanitize` lane), and it would count the test runner's own allocations.
 *
 * Every allocating entry point glibc offers is counted (Swift's runtime uses malloc for
 * objects and posix_memalign for over-aligned buffers) and forwarded to glibc's own
 * implementation through its exported __libc_* names, so no dlsym(RTLD_NEXT) bootstrap is
 * needed (dlsym itself may allocate). The count is read with
 * `long ruv_malloc_counter_value(void)`, found by the program with dlsym(RTLD_DEFAULT).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic long ruv__allocations;

static inline void ruv__count(void) { atomic_fetch_add_explicit(&ruv__allocations, 1, memory_order_relaxed); }

/* Allocations so far, in every thread. */
long ruv_malloc_counter_value(void) { return atomic_load_explicit(&ruv__allocations, memory_order_relaxed); }

void *malloc(size_t size) {
    ruv__count();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    ruv__count();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    ruv__count();
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    ruv__count();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    ruv__count();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    ruv__count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *out = pointer;
    return 0;
}

void free(void *pointer) { __libc_free(pointer); }

// One call scans many lines with one Hyperscan database.
//
// Why C: Hyperscan reports matches through a C callback with a context pointer. Doing the
// per-line loop here keeps the callback a plain C function writing into a plain array,
// instead of one Swift->C->Swift round trip (and closure context) per line.
#ifndef LOGCAST_SCAN_H
#define LOGCAST_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <hs/hs.h>

/// Scans lines `first ..< count` of `base`; line i is the bytes [starts[i], ends[i]).
///
/// Each pattern matching line i appends the pair (i, pattern id) to `pairs` (2 uint32 per
/// match; patterns should be compiled with HS_FLAG_SINGLEMATCH so a pattern reports a line
/// once). When `pairs` is full, scanning stops before the line that did not fit: its partial
/// pairs are removed, `*next_line` says where to resume, and 1 is returned so the caller can
/// grow `pairs` and call again. Returns 0 when every line was scanned, or a negative
/// Hyperscan error code (`*next_line` is then the failing line).
int lcs_scan_lines(const hs_database_t *db, hs_scratch_t *scratch, const uint8_t *base,
                   const uint32_t *starts, const uint32_t *ends, size_t first, size_t count,
                   uint32_t *pairs, size_t capacity_pairs, size_t *used_pairs, size_t *next_line);

/// A second thread that scans part of a block while the caller scans the rest: the loop
/// thread hands it the upper half of a large block's lines, scans the lower half itself,
/// then waits (the scan is the daemon's largest cost with filters, and the second core is
/// otherwise mostly idle while the loop reads, formats and writes).
typedef struct lcs_helper lcs_helper;

/// Starts the helper thread; NULL when no thread can be made (scan alone then).
lcs_helper *lcs_helper_start(void);

/// Hands the helper one `lcs_scan_lines` call (same arguments; `scratch` must be a scratch
/// space of its own, e.g. from hs_clone_scratch). Returns at once; every pointer must stay
/// valid until `lcs_helper_wait` returns. One job at a time.
void lcs_helper_submit(lcs_helper *helper, const hs_database_t *db, hs_scratch_t *scratch, const uint8_t *base,
                       const uint32_t *starts, const uint32_t *ends, size_t first, size_t count,
                       uint32_t *pairs, size_t capacity_pairs);

/// Waits for the job handed over last; returns what `lcs_scan_lines` returned, with its
/// `*used_pairs` and `*next_line`.
int lcs_helper_wait(lcs_helper *helper, size_t *used_pairs, size_t *next_line);

/// 1 when this processor can run Hyperscan (it needs SSSE3), else 0.
int lcs_platform_ok(void);

/// Lowers the calling thread's priority to `nice` (Linux nice values are per thread; Swift
/// cannot call the variadic syscall(2) that gettid needs on older glibc). 0 on success.
int lcs_thread_set_nice(int nice);

/// Makes glibc keep freed memory for reuse: allocations under `mmap_threshold` bytes come
/// from the heap (not a fresh mmap each), and up to `trim_threshold` free bytes at the top
/// of the heap stay mapped (mallopt is in <malloc.h>, which Swift's Glibc module does not
/// export). 0 on success.
int lcs_keep_freed_memory(int mmap_threshold, int trim_threshold);

#endif

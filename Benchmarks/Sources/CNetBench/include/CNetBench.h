// CNetBench: the plain C libuv side of the IO benchmarks.
//
// Why C: the rows compare ReactiveUV against what a careful C programmer gets from libuv
// alone, so the baselines (an echo server, a scheduling queue) and the load generator that
// drives both echo servers are written directly against <uv.h>. The load generator is the
// same code for both servers, so only the server differs between the two columns.
//
// Every symbol carries the `cnb_` prefix. This header does not include <uv.h>, so Swift
// sees only these functions.
#ifndef CNETBENCH_H
#define CNETBENCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Runs a TCP echo server on the calling thread with its own uv loop until SIGINT or
/// SIGTERM: every connection gets back exactly the bytes it sends (TCP_NODELAY on), and
/// when it ends its side and everything is flushed the server ends its side and closes.
/// Prints `listening on HOST:PORT` (the real port when `port` is 0) once, flushed.
/// Returns 0 after a signal, or a negative libuv error code if it cannot listen.
int cnb_echo_server_run(const char *host, int port);

/// Drives an echo server at `host:port`: opens `connections` TCP connections (TCP_NODELAY)
/// on a private uv loop, waits until all are connected, then each one sends a
/// `message_size`-byte message and waits for all of it to come back before sending the next,
/// `messages_per_connection` times. Returns the nanoseconds from the first send to the last
/// echo (connects and closes excluded), or a negative libuv error code. `*checksum` gets
/// the sum of every byte received, so two servers can be checked to do the same work.
int64_t cnb_echo_load(const char *host, int port, int connections, int message_size,
                      int64_t messages_per_connection, uint64_t *checksum);

/// The raw libuv way to hand blocks to a loop: a mutex-guarded queue of (function, context)
/// pairs drained by one uv_async_t (a send only when the queue was empty). Enqueues `n`
/// blocks that each increment a counter, from the loop's own thread before running it
/// (`from_other_thread` 0) or from a second thread while the loop runs (1), and returns the
/// nanoseconds until all have run, or a negative libuv error code.
int64_t cnb_async_queue_run(int64_t n, int from_other_thread);

/// The other raw libuv way to run something soon on the loop's thread: one heap uv_timer_t
/// per block, started with a 0 ms timeout and closed by its callback. Starts `n` of them
/// from the loop's thread and returns the nanoseconds until all have run (and closed).
int64_t cnb_timer_run(int64_t n);

/// Pins every thread of process `pid` to CPU `cpu` alone (`pid` 0: the calling thread
/// only). Returns 0, or -1 with errno set (no such CPU, or not allowed).
int cnb_pin_to_cpu(int pid, int cpu);

/// The CPU time process `pid` has used so far, user and kernel together, in nanoseconds:
/// the sum of its threads' `/proc/PID/task/TID/schedstat` run times. -1 if it is gone.
int64_t cnb_process_cpu_ns(int pid);

#ifdef __cplusplus
}
#endif

#endif

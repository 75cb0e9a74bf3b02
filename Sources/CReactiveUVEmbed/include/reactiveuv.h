/*
 * reactiveuv.h: ReactiveUV's C API (libreactiveuv.so).
 *
 * ReactiveUV is ReactiveCocoa 2's signal model on libuv. This header lets a C program use
 * it on a libuv loop the program owns (it keeps calling uv_run), or drive the runtime's
 * own loop from a foreign poll/epoll/select loop through its backend file descriptor.
 *
 * Conventions (after libuv's uv.h)
 * --------------------------------
 * Objects.  Every object is an opaque pointer `ruv_<object>_t *`, reference counted, with
 *   exactly one release function `ruv_<object>_release`. A constructor that can fail
 *   returns an int code and writes a new reference through its last argument (`out`);
 *   the caller owns that reference and releases it once. Functions taking an object
 *   *borrow* it (they take their own reference when they keep it), so a caller may
 *   release its reference as soon as it no longer needs the handle: a signal given to an
 *   operator, or subscribed to, stays alive as long as what uses it. Releasing NULL does
 *   nothing; using an object after releasing it, or releasing it twice, is undefined
 *   behaviour, as with free().
 *
 * Errors.  Functions that can fail return 0 (or a non-negative count) on success and a
 *   negative code on failure: libuv's codes as they are (UV_EINVAL, UV_ENOENT, ...), and
 *   ReactiveUV's own in the reserved range RUV_ERRNO_MIN..RUV_ERRNO_MAX (RUV_EWRONGTHREAD,
 *   ...). ruv_err_name() and ruv_strerror() name any of them. Every function returns
 *   UV_EINVAL for a NULL object or out pointer it needs. Errors a signal sends reach its
 *   error callback as such a code plus a message naming what failed ("ECONNREFUSED
 *   (connection refused) during connect on 127.0.0.1:7070").
 *
 * Values.  Every value that crosses the boundary is a byte string: a pointer and a length.
 *   Bytes handed to a callback are borrowed: valid only until the callback returns, never
 *   NUL-terminated by contract, and never NULL (a zero-length value points at a valid empty
 *   string). Bytes handed to ReactiveUV are copied before the call returns.
 *
 * Threads.  A runtime is bound to the thread that created it (its loop's thread): the
 *   functions that run or close the loop must be called there and return RUV_EWRONGTHREAD
 *   elsewhere. Everything else is safe from any thread, as documented per function.
 *   Callbacks of loop sources (timers, files, sockets, unix signals, deliver_on) run on the
 *   loop's thread; callbacks of a subject's subscribers run on the thread that sends into
 *   the subject, serialized (never two at once for one subscription), unless
 *   ruv_signal_deliver_on() moves them onto the loop. Callbacks may call back into this
 *   API (send into a subject, subscribe, dispose and release their own subscription or
 *   another one, release the signal they are subscribed to, write to the connection they
 *   read), except the loop-running functions. Disposal from inside any callback, at any
 *   point of a chunk (a read split into lines) or a burst, never crashes: nothing is
 *   delivered to that subscription after ruv_subscription_dispose() returns, and every
 *   handle it opened is closed (Tests/ReactiveUVEmbedTests/C/dispose-matrix.c).
 *
 * Callback contexts.  Every callback gets the `void *ctx` given with it. ReactiveUV never
 *   reads or frees it: keep it valid for as long as the callback can be called (for an
 *   operator's callback: while any subscription to a signal built from it is alive, and
 *   until events sent on other threads have passed; for a subscription's callbacks: until
 *   it has terminated or ruv_subscription_dispose() has returned).
 *
 * Memory.  Handles are Swift objects behind opaque pointers (no table, no lock per call);
 *   what C owns is exactly the references it was given. The library exports the functions
 *   below and no other symbol of its own.
 */
#ifndef REACTIVEUV_H
#define REACTIVEUV_H

#include <stddef.h>
#include <stdint.h>

/* libuv's loop, as uv.h declares it (`typedef struct uv_loop_s uv_loop_t`). This header
   does not include <uv.h>, so that it compiles as strict C11 and C++ (uv.h needs POSIX
   feature macros); include <uv.h> yourself for uv_loop_t and libuv's UV_E* error codes. */
struct uv_loop_s;

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------ */
/* Version                                                                               */
/* ------------------------------------------------------------------------------------ */

#define RUV_VERSION_MAJOR 0
#define RUV_VERSION_MINOR 1
#define RUV_VERSION_PATCH 0
/** The version as one number, 0xMMmmpp (major, minor, patch), for comparisons. */
#define RUV_VERSION_HEX ((RUV_VERSION_MAJOR << 16) | (RUV_VERSION_MINOR << 8) | RUV_VERSION_PATCH)

/**
 * The version of the loaded library, as RUV_VERSION_HEX computes it.
 * Compare with RUV_VERSION_HEX to detect a header/library mismatch.
 * Thread: any. Never fails.
 */
unsigned int ruv_version(void);

/**
 * The version of the loaded library as "major.minor.patch".
 * Ownership: a static string; do not free it. Thread: any. Never fails.
 */
const char *ruv_version_string(void);

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                                */
/* ------------------------------------------------------------------------------------ */

/** The reserved range of ReactiveUV's own error codes (libuv's codes lie outside it). */
#define RUV_ERRNO_MAX (-20000)
#define RUV_ERRNO_MIN (-20099)

/** Called on a thread other than the runtime's loop thread. */
#define RUV_EWRONGTHREAD (-20001)
/** The runtime is closed, or the subject has already terminated. */
#define RUV_ECLOSED (-20002)
/** ruv_signal_timeout(): the signal did not terminate in time. */
#define RUV_ETIMEOUT (-20003)
/** An operator was given an argument it cannot use (NaN or negative seconds, ...). */
#define RUV_EARGUMENT (-20004)
/** A line was longer than the limit (ruv_signal_lines(), file and socket lines). */
#define RUV_ELINETOOLONG (-20005)
/** The runtime's loop cannot be run from here: it is a host's loop (ruv_runtime_run_once). */
#define RUV_EHOSTLOOP (-20006)
/** An error the C API has no code for (its message says what it was). */
#define RUV_EUNKNOWN (-20099)

/**
 * The symbolic name of an error code: "EINVAL", "ECONNREFUSED", "EWRONGTHREAD", ...
 * Works for libuv's codes and ReactiveUV's; "UNKNOWN" for anything else.
 * Ownership: a static string; do not free it. Thread: any. Never fails.
 */
const char *ruv_err_name(int code);

/**
 * A human-readable message for an error code: "connection refused", ...
 * Works for libuv's codes and ReactiveUV's; "unknown error" for anything else.
 * Ownership: a static string; do not free it. Thread: any. Never fails.
 */
const char *ruv_strerror(int code);

/* ------------------------------------------------------------------------------------ */
/* Objects and callbacks                                                                  */
/* ------------------------------------------------------------------------------------ */

/** A ReactiveUV runtime bound to one libuv loop and that loop's thread. */
typedef struct ruv_runtime_s ruv_runtime_t;
/** An immutable, cold-or-hot signal of byte strings (RAC's RACSignal). */
typedef struct ruv_signal_s ruv_signal_t;
/** A hot signal sent into by hand (RAC's RACSubject). */
typedef struct ruv_subject_s ruv_subject_t;
/** One subscription to a signal; dispose it to stop receiving. */
typedef struct ruv_subscription_s ruv_subscription_t;
/** One TCP connection (accepted by ruv_tcp_listen() or made by ruv_tcp_connect()). */
typedef struct ruv_connection_s ruv_connection_t;
/** The output of a ruv_map_cb: append the new value's bytes to it. */
typedef struct ruv_buffer_s ruv_buffer_t;

/** Receives a value: `len` bytes at `bytes`, borrowed for the duration of the call. */
typedef void (*ruv_next_cb)(const void *bytes, size_t len, void *ctx);
/** Receives an error: a negative code and a NUL-terminated message, borrowed for the call. */
typedef void (*ruv_error_cb)(int code, const char *message, void *ctx);
/** Receives completion. */
typedef void (*ruv_completed_cb)(void *ctx);
/** A predicate for ruv_signal_filter(): return nonzero to keep the value. */
typedef int (*ruv_filter_cb)(const void *bytes, size_t len, void *ctx);
/**
 * A transform for ruv_signal_map(): append the new value to `out` (ruv_buffer_append()).
 * Return 0 to send what was appended (possibly nothing: an empty value), a positive number
 * to drop this value, or a negative code to fail the signal with that code.
 */
typedef int (*ruv_map_cb)(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx);
/**
 * Maps a value to a signal, for ruv_signal_flatten_map() and ruv_signal_switch_to_latest().
 * Return a new reference (ReactiveUV takes it over and releases it), or NULL for none
 * (treated as an empty signal).
 */
typedef ruv_signal_t *(*ruv_signal_cb)(const void *bytes, size_t len, void *ctx);
/**
 * Receives a TCP connection. The callback owns one reference to `connection` and releases
 * it with ruv_connection_release() when it no longer needs the handle (releasing does not
 * close the connection: see ruv_tcp_listen() and ruv_tcp_connect() for who owns the socket).
 */
typedef void (*ruv_connection_cb)(ruv_connection_t *connection, void *ctx);
/** Told the bound address once a server listens: numeric host and port (the real one for port 0). */
typedef void (*ruv_listening_cb)(const char *host, int port, void *ctx);

/* ------------------------------------------------------------------------------------ */
/* Runtime                                                                               */
/* ------------------------------------------------------------------------------------ */

/**
 * Creates a runtime on `loop`, or on a loop of its own when `loop` is NULL.
 *
 * On a host's loop, the host keeps running it with uv_run on this thread; ReactiveUV adds
 * two unreferenced handles to it (a uv_async_t for work handed in from other threads and a
 * uv_prepare_t for timers), so they never keep uv_run alive by themselves; timers and
 * sockets that ReactiveUV starts do keep it alive while they are active.
 * On its own loop, drive the runtime with ruv_runtime_run_once() from a foreign poll loop
 * (see ruv_runtime_backend_fd()).
 *
 * The runtime is bound to the calling thread, which must be the thread that runs `loop`.
 * Ownership: `*out` is a new reference; close with ruv_runtime_close(), then free with
 * ruv_runtime_release(). A host's `loop` must outlive the runtime's handles (see
 * ruv_runtime_close()).
 * Thread: the loop's thread (the runtime is bound to the caller).
 * Returns: 0; UV_EINVAL (NULL out); libuv's code when the loop or its handles cannot be
 * initialized (UV_EMFILE, ...).
 */
int ruv_runtime_create(struct uv_loop_s *loop, ruv_runtime_t **out);

/**
 * The runtime's libuv loop: the host's, or its own.
 * Ownership: borrowed; valid until the runtime is released. Use it only on the loop's
 * thread, as libuv requires. Thread: any. Returns NULL for a NULL runtime.
 */
struct uv_loop_s *ruv_runtime_loop(ruv_runtime_t *runtime);

/**
 * The file descriptor a foreign poll loop waits on for the runtime's loop (libuv's
 * uv_backend_fd: an epoll descriptor; poll it for POLLIN, then call
 * ruv_runtime_run_once()). Sockets, file watches and work handed in from other threads
 * all wake it.
 *
 * Watching this descriptor is enough for every event but timers: a host needs no
 * prepare step (a hook before it sleeps). Any ruv_* call made on the loop's thread outside
 * ruv_runtime_run_once() that leaves work to do now (a subscribe that starts a socket or
 * a file watch, a dispose that closes one, a subject send or a write that queued
 * something) makes the descriptor readable before it returns, so a host such as
 * libevent's event_base, which only watches descriptors, wakes for it. Timers are the
 * one thing the descriptor does not announce: after each ruv_runtime_run_once() (and
 * whenever it woke for the descriptor), arm one timer of the host's own from
 * ruv_runtime_backend_timeout() (-1: none) and call ruv_runtime_run_once() when it fires.
 * Tested inside GLib's GMainLoop (g_unix_fd_add plus g_timeout_add) and libevent's
 * event_base (an EV_READ|EV_PERSIST event plus an evtimer).
 * Thread: any (the descriptor never changes). Returns: the descriptor (>= 0); UV_EINVAL;
 * RUV_ECLOSED after ruv_runtime_close().
 */
int ruv_runtime_backend_fd(ruv_runtime_t *runtime);

/**
 * How long a foreign poll loop may wait on ruv_runtime_backend_fd() before it must call
 * ruv_runtime_run_once(), in milliseconds: 0 when there is work to do now (callbacks to
 * run, handles started since the loop last ran, whose descriptors libuv registers only in
 * its next iteration), -1 when only an event on the
 * descriptor can bring work (nothing is scheduled), otherwise the time until the next timer.
 * Thread: the loop's thread. Returns: the timeout (>= -1); UV_EINVAL; RUV_EWRONGTHREAD;
 * RUV_ECLOSED after ruv_runtime_close().
 */
int ruv_runtime_backend_timeout(ruv_runtime_t *runtime);

/**
 * Runs one non-blocking iteration of the runtime's own loop (uv_run with UV_RUN_NOWAIT):
 * due timers, ready sockets, work handed in from other threads; their callbacks run inside
 * this call.
 * Thread: the loop's thread, outside the runtime's callbacks.
 * Returns: 1 while something (an active timer or socket, queued work) keeps the loop
 * alive, 0 when nothing does; UV_EINVAL; RUV_EWRONGTHREAD; UV_EBUSY when called from
 * inside one of the runtime's callbacks (uv_run is not re-entrant); RUV_EHOSTLOOP on a
 * runtime created on a host's loop (the host runs it with uv_run); RUV_ECLOSED after
 * ruv_runtime_close().
 */
int ruv_runtime_run_once(ruv_runtime_t *runtime);

/**
 * Closes the runtime: every timer, file watch, socket and unix-signal watch it started is
 * closed and no callback of theirs runs again (their subscriptions end silently); work
 * queued from other threads runs first; later work is dropped. Subjects, and subscriptions
 * to them, do not belong to a runtime and keep working (except through operators that
 * needed this runtime's loop). A subscription to one of the runtime's sources that is still
 * live ends here, silently (none of its callbacks runs again); its memory is freed once the
 * program has released its references (ruv_subscription_release, and every
 * ruv_connection_t a connection callback was given).
 *
 * On its own loop, the loop is run until every handle has closed, then closed
 * (uv_loop_close). On a host's loop only ReactiveUV's handles are closed; their close
 * callbacks run during the host's next uv_run, which the host must call before
 * uv_loop_close (for example `uv_run(loop, UV_RUN_DEFAULT)`).
 * Calling it again does nothing and returns 0.
 * Thread: the loop's thread, outside the runtime's callbacks.
 * Returns: 0; UV_EINVAL; RUV_EWRONGTHREAD; UV_EBUSY from inside one of the runtime's
 * callbacks, or when uv_loop_close reports a request still in flight.
 */
int ruv_runtime_close(ruv_runtime_t *runtime);

/**
 * Releases the caller's reference to the runtime. Close it first: when released unclosed on
 * its loop's thread, outside its callbacks, it is closed here (errors ignored); released
 * unclosed elsewhere, its handles stay on the loop (and keep the runtime's memory) for good.
 * Signals built on the runtime keep what they need of it alive.
 * Thread: any. NULL does nothing.
 */
void ruv_runtime_release(ruv_runtime_t *runtime);

/* ------------------------------------------------------------------------------------ */
/* Subjects                                                                              */
/* ------------------------------------------------------------------------------------ */

/**
 * Creates a subject: a hot signal whose values go to the subscribers present when they are
 * sent (RAC's RACSubject). With `replay_capacity` > 0 it is a replay subject (RAC's
 * RACReplaySubject) that replays up to that many latest values to each new subscriber
 * (SIZE_MAX: all of them). Once terminated it replays its terminal event to late subscribers.
 * Ownership: `*out` is a new reference; release with ruv_subject_release().
 * Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_subject_create(size_t replay_capacity, ruv_subject_t **out);

/**
 * The subject as a signal, to subscribe to or build on.
 * Ownership: `*out` is a new reference; release with ruv_signal_release() (the signal keeps
 * the subject alive). Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_subject_signal(ruv_subject_t *subject, ruv_signal_t **out);

/**
 * Sends a value (a copy of `len` bytes at `bytes`; `bytes` may be NULL when `len` is 0) to
 * every current subscriber, synchronously on the calling thread: the subscribers'
 * callbacks have run when it returns.
 * Thread: any; sends from several threads are serialized; a subscriber's callback may send
 * into the subject again (the nested send is delivered inside the outer one).
 * Returns: 0; UV_EINVAL; RUV_ECLOSED when the subject has terminated (the value is dropped).
 */
int ruv_subject_send_next(ruv_subject_t *subject, const void *bytes, size_t len);

/**
 * Fails the subject with `code` (negative; a libuv code, one of RUV_E*, or a code of your
 * own outside both ranges) and `message` (copied; NULL for the code's ruv_strerror()).
 * Every subscriber's error callback gets them.
 * Thread: any. Returns: 0; UV_EINVAL (code >= 0); RUV_ECLOSED when already terminated.
 */
int ruv_subject_send_error(ruv_subject_t *subject, int code, const char *message);

/**
 * Completes the subject. Thread: any.
 * Returns: 0; UV_EINVAL; RUV_ECLOSED when already terminated.
 */
int ruv_subject_send_completed(ruv_subject_t *subject);

/**
 * Releases the caller's reference. The subject lives on while signals obtained from it
 * exist; releasing does not terminate it. Thread: any. NULL does nothing.
 */
void ruv_subject_release(ruv_subject_t *subject);

/* ------------------------------------------------------------------------------------ */
/* Signals: constants and timers                                                          */
/* ------------------------------------------------------------------------------------ */

/**
 * A signal that sends one value (a copy of the bytes) and completes, at each subscription
 * (RAC's +return:). Ownership: `*out` is a new reference. Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_signal_return(const void *bytes, size_t len, ruv_signal_t **out);

/** A signal that completes at once (RAC's +empty). Thread: any. Returns: 0; UV_EINVAL. */
int ruv_signal_empty(ruv_signal_t **out);

/** A signal that never sends anything (RAC's +never). Thread: any. Returns: 0; UV_EINVAL. */
int ruv_signal_never(ruv_signal_t **out);

/**
 * A signal that fails at once with `code` (negative) and `message` (copied; NULL for the
 * code's ruv_strerror()) (RAC's +error:). Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_signal_error(int code, const char *message, ruv_signal_t **out);

/**
 * A signal that ticks every `seconds` on the runtime's loop, starting one interval after
 * subscription, and never completes (RAC's +interval:onScheduler:). Each value is the
 * loop's monotonic clock at the tick in nanoseconds, as decimal ASCII digits ("1234567").
 * Disposing the subscription stops the uv_timer_t.
 * Callbacks: on the loop's thread. Ownership: `*out` is a new reference.
 * Thread: any. Returns: 0; UV_EINVAL; RUV_EARGUMENT (seconds not > 0).
 */
int ruv_signal_interval(ruv_runtime_t *runtime, double seconds, ruv_signal_t **out);

/**
 * A signal that sends one tick (as ruv_signal_interval() does) `seconds` after subscription
 * and completes. Callbacks: on the loop's thread. Thread: any.
 * Returns: 0; UV_EINVAL; RUV_EARGUMENT (seconds negative or NaN).
 */
int ruv_signal_timer(ruv_runtime_t *runtime, double seconds, ruv_signal_t **out);

/**
 * Releases the caller's reference to a signal. A signal lives on while subscriptions to it,
 * or signals built from it, exist; releasing it never ends a subscription (a callback may
 * release the signal it is subscribed to). Thread: any. NULL does nothing.
 */
void ruv_signal_release(ruv_signal_t *signal);

/* ------------------------------------------------------------------------------------ */
/* Operators                                                                              */
/* ------------------------------------------------------------------------------------ */
/*
 * Each operator borrows its source signal(s) and writes a new signal to `*out` (a new
 * reference, released with ruv_signal_release()). Nothing runs until the new signal is
 * subscribed to; each subscription runs the operator afresh. Operator callbacks run on
 * the thread the source sends on (the loop's thread for loop sources), once per value, and
 * get the operator's `ctx`. All are safe to call from any thread and return 0, UV_EINVAL
 * for a NULL signal, callback or out pointer, or the code listed.
 */

/** Keeps the values for which `predicate` returns nonzero (RAC's -filter:). */
int ruv_signal_filter(ruv_signal_t *source, ruv_filter_cb predicate, void *ctx, ruv_signal_t **out);

/**
 * Replaces each value with the bytes `transform` appends to its buffer (RAC's -map:); the
 * transform may also drop a value or fail the signal (see ruv_map_cb).
 */
int ruv_signal_map(ruv_signal_t *source, ruv_map_cb transform, void *ctx, ruv_signal_t **out);

/**
 * Appends `len` bytes to a map callback's output buffer.
 * Ownership: the buffer belongs to ReactiveUV and is valid only during the ruv_map_cb call
 * that received it. Thread: that callback's. Returns: 0; UV_EINVAL (NULL buffer, or NULL
 * bytes with len > 0).
 */
int ruv_buffer_append(ruv_buffer_t *buffer, const void *bytes, size_t len);

/**
 * The first `count` values, then completion; the source is disposed right after the last
 * one; `count` 0 completes at once (RAC's -take:).
 */
int ruv_signal_take(ruv_signal_t *source, size_t count, ruv_signal_t **out);

/** Drops the first `count` values (RAC's -skip:). */
int ruv_signal_skip(ruv_signal_t *source, size_t count, ruv_signal_t **out);

/** Drops a value whose bytes equal the last value sent (RAC's -distinctUntilChanged). */
int ruv_signal_distinct_until_changed(ruv_signal_t *source, ruv_signal_t **out);

/**
 * RAC's -throttle: (a debounce): holds each value; a newer value replaces it and restarts
 * the wait; the held value is sent once `seconds` pass without a newer one, on the
 * runtime's loop thread. Completion sends a held value first; an error drops it.
 * Returns also RUV_EARGUMENT (seconds negative or NaN).
 */
int ruv_signal_throttle(ruv_signal_t *source, ruv_runtime_t *runtime, double seconds, ruv_signal_t **out);

/**
 * Like ruv_signal_throttle(), except that completion drops a held value (Rx's debounce).
 * Returns also RUV_EARGUMENT (seconds negative or NaN).
 */
int ruv_signal_debounce(ruv_signal_t *source, ruv_runtime_t *runtime, double seconds, ruv_signal_t **out);

/**
 * Fails with RUV_ETIMEOUT, disposing the source, unless the source terminates within
 * `seconds` (a limit on the whole subscription; values do not restart it) (RAC's
 * -timeout:onScheduler:). The timeout error is sent on the runtime's loop thread.
 * Returns also RUV_EARGUMENT (seconds negative or NaN).
 */
int ruv_signal_timeout(ruv_signal_t *source, ruv_runtime_t *runtime, double seconds, ruv_signal_t **out);

/**
 * Re-sends values and completion `seconds` later on the runtime's loop thread; an error is
 * forwarded at once (RAC's -delay:). Returns also RUV_EARGUMENT (seconds negative or NaN).
 */
int ruv_signal_delay(ruv_signal_t *source, ruv_runtime_t *runtime, double seconds, ruv_signal_t **out);

/**
 * Re-sends every event on the runtime's loop thread, in order (RAC's -deliverOn:): the way
 * to bring a subject fed by worker threads onto the loop. Events still queued when the
 * subscription is disposed are dropped; after ruv_runtime_close() nothing more is delivered.
 */
int ruv_signal_deliver_on(ruv_signal_t *source, ruv_runtime_t *runtime, ruv_signal_t **out);

/**
 * Forwards the values of both signals as they arrive; completes when both have completed;
 * the first error ends it (RAC's -merge:).
 */
int ruv_signal_merge(ruv_signal_t *first, ruv_signal_t *second, ruv_signal_t **out);

/**
 * Merges `count` signals (RAC's +merge:); `count` 0 gives a signal that completes at once.
 * Returns also UV_EINVAL for a NULL `signals` with count > 0 or a NULL element.
 */
int ruv_signal_merge_many(ruv_signal_t *const *signals, size_t count, ruv_signal_t **out);

/**
 * Forwards `first`, then, once it completes, `second` (RAC's -concat:). An error from
 * `first` ends it.
 */
int ruv_signal_concat(ruv_signal_t *first, ruv_signal_t *second, ruv_signal_t **out);

/**
 * Maps each value to a signal with `transform` and merges those signals (RAC's
 * -flattenMap:). Completes once the source and every inner signal have completed.
 */
int ruv_signal_flatten_map(ruv_signal_t *source, ruv_signal_cb transform, void *ctx, ruv_signal_t **out);

/**
 * Maps each value to a signal with `transform` and forwards only the latest one: a new
 * inner signal disposes the previous one (RAC's -map: then -switchToLatest). Completes when
 * the source and the latest inner signal have completed.
 */
int ruv_signal_switch_to_latest(ruv_signal_t *source, ruv_signal_cb transform, void *ctx, ruv_signal_t **out);

/**
 * On error, subscribes to the source again, up to `count` times; `count` 0 retries forever
 * (RAC's -retry:). Values of every attempt are forwarded; completion ends it.
 */
int ruv_signal_retry(ruv_signal_t *source, size_t count, ruv_signal_t **out);

/** On error, continues with `replacement` instead (RAC's -catchTo:). */
int ruv_signal_catch_to(ruv_signal_t *source, ruv_signal_t *replacement, ruv_signal_t **out);

/**
 * Forwards the source until `trigger` sends a value or completes, then completes (RAC's
 * -takeUntil:).
 */
int ruv_signal_take_until(ruv_signal_t *source, ruv_signal_t *trigger, ruv_signal_t **out);

/** Sends a copy of the given bytes first, then the source's values (RAC's -startWith:). */
int ruv_signal_start_with(ruv_signal_t *source, const void *bytes, size_t len, ruv_signal_t **out);

/**
 * Splits the source's byte chunks into lines, without their "\n" or "\r\n" (a last line
 * without a break is sent at completion), decoded as UTF-8 (invalid sequences become
 * U+FFFD). A line over `max_length` bytes (0: 1 MiB) fails the signal with RUV_ELINETOOLONG.
 */
int ruv_signal_lines(ruv_signal_t *source, size_t max_length, ruv_signal_t **out);

/* ------------------------------------------------------------------------------------ */
/* Subscriptions                                                                          */
/* ------------------------------------------------------------------------------------ */

/**
 * Subscribes to `signal` (RAC's -subscribeNext:error:completed:). The subscription runs
 * synchronously on the calling thread: a signal that sends at once calls back before this
 * returns. Any callback may be NULL. After an error or completion nothing more is delivered.
 *
 * Ownership: when `out` is not NULL, `*out` is written *before* the signal is subscribed to
 * (so a callback that runs during the call can already dispose it) and is a new reference,
 * released with ruv_subscription_release(). Releasing it does not end the subscription;
 * pass NULL for a subscription you will never dispose (it ends when the signal terminates
 * or its runtime closes).
 * Callbacks: on the thread the signal sends on (see Threads above), one at a time.
 * Thread: any. Returns: 0; UV_EINVAL (NULL signal).
 */
int ruv_signal_subscribe(ruv_signal_t *signal, ruv_next_cb on_next, ruv_error_cb on_error,
                         ruv_completed_cb on_completed, void *ctx, ruv_subscription_t **out);

/**
 * Ends the subscription: disposes the signal's resources (timers, sockets, inner
 * subscriptions) and calls none of its callbacks afterwards. When it returns, none of the
 * subscription's next/error/completed callbacks is running on another thread or will start
 * (one running on the calling thread, which is disposing its own subscription, finishes
 * normally). An operator callback (filter, map, ...) already running on another thread for
 * an event on its way may still finish; its result is dropped. Disposing again, or after
 * the signal terminated, does nothing.
 * Thread: any (IO handles are closed on the loop's thread, later when called elsewhere).
 * Returns: 0; UV_EINVAL.
 */
int ruv_subscription_dispose(ruv_subscription_t *subscription);

/**
 * Whether the subscription has ended (disposed, or the signal terminated): 1 or 0.
 * Thread: any. Returns: 1, 0; UV_EINVAL.
 */
int ruv_subscription_is_disposed(ruv_subscription_t *subscription);

/**
 * Releases the caller's reference; the subscription itself goes on (dispose it first to
 * end it). A callback may release its own subscription. Thread: any. NULL does nothing.
 */
void ruv_subscription_release(ruv_subscription_t *subscription);

/* ------------------------------------------------------------------------------------ */
/* Files and unix signals                                                                 */
/* ------------------------------------------------------------------------------------ */

/**
 * Follows the file at `path` like GNU `tail -F`: sends each line appended from now on
 * (without its line break, decoded as UTF-8: invalid sequences become U+FFFD), through
 * truncation and rotation, until disposed. Order: across any number of rotations, however
 * fast, every line of a file comes before any line of the file that replaced it at the
 * path (a renamed-away file is read to its end first; it is read until it has been quiet
 * for a second while a newer file is at the path). A missing file (or directory) is
 * waited for, and so is anything at the path that cannot be followed for now — a
 * directory, FIFO, socket or device, a file that may not be read (EACCES) — which is never
 * opened in a way that blocks; a readable file found there later is read from its start.
 * `start_lines` > 0 first sends the file's last `start_lines` complete lines (`tail -n N`).
 * Other failures end it with libuv's code (UV_ENOTDIR, a read error, ...); a line over
 * 1 MiB with RUV_ELINETOOLONG. It never completes. Its inotify watch and a 200 ms timer
 * keep the loop alive while subscribed: the timer looks at the path and every open file
 * five times a second even while inotify is in use, on purpose — it is the safety net for
 * what inotify does not report (writes through a shared mapping, an overflowed event
 * queue, a watch that broke with its directory) and it ends a rotated file's reading once
 * it has been quiet; each look is a stat and an fstat.
 * Callbacks: on the loop's thread. Ownership: `*out` is a new reference.
 * Thread: any. Returns: 0; UV_EINVAL (NULL runtime or path).
 */
int ruv_file_tail(ruv_runtime_t *runtime, const char *path, size_t start_lines, ruv_signal_t **out);

/** ruv_file_tail_ex() flag: leave out a line longer than the limit and go on reading after
 *  it, instead of ending the signal with RUV_ELINETOOLONG. The line is never held whole
 *  (memory stays bounded) and is not reported to the subscriber. */
#define RUV_TAIL_SKIP_LONG_LINES 1u
/** ruv_file_tail_ex() flag: follow with uv_fs_poll instead of inotify (network and FUSE
 *  file systems fall back to it anyway). */
#define RUV_TAIL_POLL 2u

/**
 * ruv_file_tail() with a line limit and flags. `max_line_bytes` is the longest line
 * accepted, without its break (0: 1 MiB, ruv_file_tail()'s limit); a longer line ends the
 * signal with RUV_ELINETOOLONG once the lines before it are sent, or with
 * RUV_TAIL_SKIP_LONG_LINES is left out while the lines after it go on (for a log that
 * must keep flowing past one runaway line). `flags`: RUV_TAIL_SKIP_LONG_LINES,
 * RUV_TAIL_POLL, or 0. Everything else is as ruv_file_tail().
 * Thread: any. Returns: 0; UV_EINVAL (NULL runtime or path, an unknown flag).
 */
int ruv_file_tail_ex(ruv_runtime_t *runtime, const char *path, size_t start_lines, size_t max_line_bytes,
                     unsigned int flags, ruv_signal_t **out);

/**
 * Reads the file at `path` once, sending each line (without its break, decoded as UTF-8),
 * then completes; a last line without a break is sent too. A missing file is an error
 * (UV_ENOENT). Callbacks: on the loop's thread (the reads run on libuv's thread pool).
 * Ownership: `*out` is a new reference. Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_file_lines(ruv_runtime_t *runtime, const char *path, ruv_signal_t **out);

/**
 * Reads the file at `path` once, in chunks of up to 64 KiB, then completes; errors as
 * ruv_file_lines(). Callbacks: on the loop's thread. Ownership: `*out` is a new reference.
 * Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_file_read(ruv_runtime_t *runtime, const char *path, ruv_signal_t **out);

/**
 * Sends the signal number each time the process receives unix signal `signum` while
 * subscribed (libuv's uv_signal_t); never completes. The value is the number as a C `int`:
 * `len == sizeof(int)`, read it with `int signum; memcpy(&signum, bytes, sizeof signum);`.
 * The watch keeps the loop alive while subscribed. When the last watch of a signal stops,
 * the signal's action is what it was before the first watch started (a host's own handler,
 * SIG_IGN, ...), not SIG_DFL. A number libuv cannot watch fails the subscription with
 * UV_EINVAL.
 * Callbacks: on the loop's thread. Ownership: `*out` is a new reference.
 * Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_unix_signal_watch(ruv_runtime_t *runtime, int signum, ruv_signal_t **out);

/** Readiness bits of ruv_descriptor_poll() (the values of libuv's uv_poll_event). */
#define RUV_POLL_READABLE 1
#define RUV_POLL_WRITABLE 2
#define RUV_POLL_DISCONNECT 4
#define RUV_POLL_PRIORITIZED 8

/**
 * Watches a descriptor that another library owns (a client library's socket) for the
 * RUV_POLL_* `events` (libuv's uv_poll_t) and sends the ready bits, as decimal ASCII digits
 * of the mask ("1" readable, "3" readable and writable), each time the loop sees the
 * descriptor ready; never completes. Level-triggered: while the descriptor stays ready a
 * value comes every loop iteration, so do the library's IO in the callback (or dispose).
 * The descriptor stays the caller's: it is never read, written or closed; dispose before
 * closing it. Errors go to the subscription: UV_EBADF (not open, or closed under the
 * watch), UV_EPERM (a regular file, which epoll cannot watch), UV_EEXIST (already watched
 * on this loop). Callbacks: on the loop's thread. Ownership: `*out` is a new reference.
 * Thread: any. Returns: 0; UV_EINVAL; RUV_EARGUMENT (fd negative, no events, unknown bits).
 */
int ruv_descriptor_poll(ruv_runtime_t *runtime, int fd, int events, ruv_signal_t **out);

/* ------------------------------------------------------------------------------------ */
/* TCP                                                                                   */
/* ------------------------------------------------------------------------------------ */

/**
 * Listens on `host:port` (a numeric address or a name; port 0 lets the kernel choose) until
 * the returned subscription is disposed or the runtime closes.
 * `on_listening` (may be NULL) is told the bound address once; `on_connection` gets each
 * accepted connection; `on_error` (may be NULL) gets the failure to listen (UV_EADDRINUSE,
 * UV_EACCES, a name that does not resolve), after which nothing more is called.
 * The subscription owns the accepted sockets: disposing it stops listening and closes
 * every connection still open; a connection that ends on its own is forgotten.
 * Callbacks: on the loop's thread. Ownership: as ruv_signal_subscribe().
 * Thread: any. Returns: 0; UV_EINVAL (NULL runtime, host, on_connection; port outside 0..65535).
 */
int ruv_tcp_listen(ruv_runtime_t *runtime, const char *host, int port, ruv_listening_cb on_listening,
                   ruv_connection_cb on_connection, ruv_error_cb on_error, void *ctx,
                   ruv_subscription_t **out);

/**
 * Connects to `host:port`. `on_connected` gets the connection once established;
 * `on_error` (may be NULL) the failure to connect (UV_ECONNREFUSED, ...); `on_closed` (may
 * be NULL) is called after the connection has closed, for whatever reason.
 * The subscription owns the socket: disposing it closes the connection (or cancels the
 * attempt, silently).
 * Callbacks: on the loop's thread. Ownership: as ruv_signal_subscribe().
 * Thread: any. Returns: 0; UV_EINVAL (NULL runtime, host, on_connected; port outside 1..65535).
 */
int ruv_tcp_connect(ruv_runtime_t *runtime, const char *host, int port, ruv_connection_cb on_connected,
                    ruv_error_cb on_error, ruv_completed_cb on_closed, void *ctx,
                    ruv_subscription_t **out);

/**
 * The signal of the bytes the peer sends, chunk by chunk, completing at end of stream.
 * Only one subscription may read a connection at a time.
 * Callbacks: on the loop's thread. Ownership: `*out` is a new reference.
 * Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_connection_reads(ruv_connection_t *connection, ruv_signal_t **out);

/**
 * The signal of the lines the peer sends, without their breaks, completing at end of
 * stream; a line over 1 MiB fails it with RUV_ELINETOOLONG. Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_connection_lines(ruv_connection_t *connection, ruv_signal_t **out);

/**
 * Queues a copy of the bytes for writing. Write failures close the connection.
 * Thread: any (the write happens on the loop's thread).
 * Returns: 0; UV_EINVAL; RUV_ECLOSED when the connection is closed.
 */
int ruv_connection_write(ruv_connection_t *connection, const void *bytes, size_t len);

/**
 * Writes every value of `source` to the connection as it arrives, in order; then, when
 * `shutdown_when_done` is nonzero and the source completes, shuts the write side down.
 * `on_error` (may be NULL) gets a failure of the source or of writing; `on_done` (may be
 * NULL) is called when everything was written (and shut down). The subscription (see
 * ruv_signal_subscribe() for ownership; `out` may be NULL) ends it early when disposed.
 * Callbacks: on the loop's thread. Thread: any. Returns: 0; UV_EINVAL.
 */
int ruv_connection_send(ruv_connection_t *connection, ruv_signal_t *source, int shutdown_when_done,
                        ruv_error_cb on_error, ruv_completed_cb on_done, void *ctx,
                        ruv_subscription_t **out);

/**
 * Closes the connection (both directions, at once; queued writes are dropped). Thread: any.
 * Returns: 0; UV_EINVAL.
 */
int ruv_connection_close(ruv_connection_t *connection);

/**
 * The peer's address as "host:port" into `buffer` (NUL-terminated, truncated to `size`).
 * Thread: any. Returns: the length of the full text; UV_EINVAL; UV_ENOTCONN when unknown.
 */
int ruv_connection_peer(ruv_connection_t *connection, char *buffer, size_t size);

/**
 * Releases the caller's reference to the handle; the socket stays open (its listen or
 * connect subscription owns it). Thread: any. NULL does nothing.
 */
void ruv_connection_release(ruv_connection_t *connection);

#ifdef __cplusplus
}
#endif

#endif /* REACTIVEUV_H */

// cnats's libuv adapter, compiled once (see adapter.c for why it needs a file of its own).
#ifndef REACTIVEUV_CNATSLIBUV_H
#define REACTIVEUV_CNATSLIBUV_H

#include <uv.h>
#include <nats/nats.h>

/// Initialises the adapter once per process (idempotent; any thread).
void ruvnats_libuv_init(void);

/// Tells the adapter that the calling thread runs `loop` (call it on the loop's thread
/// before connecting: the adapter attaches its handles directly only there and hands every
/// other thread's request to the loop through its own `uv_async_t`).
void ruvnats_libuv_set_thread_loop(uv_loop_t *loop);

/// Makes `opts` run the connection's socket IO on `loop` through the adapter's callbacks.
/// Returns the cnats status of `natsOptions_SetEventLoop`.
natsStatus ruvnats_options_set_libuv_loop(natsOptions *opts, uv_loop_t *loop);

#endif

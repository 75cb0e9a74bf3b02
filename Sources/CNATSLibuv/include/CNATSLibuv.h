// The libuv adapter for cnats's event-loop callbacks (adapter.c says why it is our own).
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

/// Whether `handle` is still among `loop`'s handles (its close callback has not run).
bool ruvnats_loop_has_handle(uv_loop_t *loop, uv_handle_t *handle);

/// The adapter's own wake-up handle (`uv_async_t`) for connection `nc`, recorded when the
/// adapter first attached it; NULL when unknown. While this handle is still on the loop
/// the adapter may call `natsConnection_Close(nc)` (when one of its queued poll updates
/// fails), so `nc` must not be destroyed before it has gone (see NATSConnection.swift).
uv_handle_t *ruvnats_adapter_handle(natsConnection *nc);

/// Forgets what `ruvnats_adapter_handle` recorded for `nc`.
void ruvnats_adapter_forget(natsConnection *nc);

// Bytes published on `nc` that have not reached the server yet: what cnats holds
// unflushed plus the socket's send queue (SIOCOUTQ: written but not acknowledged by the
// server's TCP). -1 once the connection is closed. On the loop's thread (the adapter's
// socket handle is the loop's).
long ruvnats_unsent_bytes(natsConnection *nc);
#endif

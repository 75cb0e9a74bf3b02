// cnats's event-loop callbacks on a libuv loop: this library's own adapter, in place of the
// one cnats ships as nats/adapters/libuv.h.
//
// Why not cnats's adapter: it polls cnats's own socket descriptor, and cnats closes that
// descriptor on whichever thread finds the connection broken (its ping timer thread when
// the server stops answering) right after *queueing* "stop polling" for the loop. A poll
// update queued earlier from another thread (cnats's flusher asking to write) could be
// applied by the loop after the close: libuv then registers a closed descriptor with epoll,
// gets EBADF, and calls abort() without a word (uv__io_poll). That is what killed logcast's
// 3-node leader-kill test every run (strace: a cnats thread's shutdown(28) and close(28),
// then the loop's epoll_ctl(EPOLL_CTL_ADD, 28, IN|OUT) = EBADF, then SIGABRT).
//
// What this adapter does instead:
// - it polls a *duplicate* of cnats's descriptor, made when cnats attaches the socket (on
//   cnats's thread, before cnats can close it) and closed only in the poll handle's close
//   callback, after libuv has stopped watching it. Whatever cnats closes and whenever, the
//   descriptor libuv watches stays valid;
// - a removal of READ interest means cnats stops polling this socket for good (it is about
//   to close it: reconnect or close), so it stops the handle completely and shuts the
//   duplicate down (the connection ends now, as cnats's close would end it);
// - events of a handle that is no longer the connection's current one (a socket replaced by
//   a reconnect) are not passed to cnats: they would be read as events of the new socket;
// - after an error event (libuv stops the handle itself on POLLERR and says UV_EBADF) cnats
//   reads, and the handle is started again unless cnats stopped polling. cnats's adapter
//   only read, so the socket stayed unpolled while cnats thought it was: the loop stopped
//   reading the connection until cnats's ping timer found it stale seconds later (in
//   logcast's leader-kill test the callback saw UV_EBADF ~20 times per run).
//
// Like cnats's adapter, requests made on the loop's thread are applied at once (unless
// others wait in the queue: order is kept), requests from other threads are queued and
// applied by the loop through a uv_async_t.
#include <nats/nats.h>
#include <uv.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "CNATSLibuv.h"

enum { RUV_ATTACH = 1, RUV_READ, RUV_WRITE, RUV_DETACH };

// One queued request from a thread other than the loop's.
typedef struct ruv_event {
    int type;
    bool add;
    int fd;  // RUV_ATTACH: the duplicate to poll (owned by the event until applied)
    struct ruv_event *next;
} ruv_event;

struct ruv_adapter;

// A poll handle and the duplicate descriptor it watches (closed in its close callback).
typedef struct {
    uv_poll_t handle;
    int fd;
} ruv_poll;

// The adapter's state for one connection. Loop thread only, except `lock`, `head`, `tail`.
typedef struct ruv_adapter {
    natsConnection *nc;
    uv_loop_t *loop;
    uv_async_t *wakeup;
    ruv_poll *poll;  // the current socket's handle, or NULL
    int events;      // UV_READABLE | UV_WRITABLE wanted by cnats
    bool detached;
    uv_mutex_t lock;
    ruv_event *head;
    ruv_event *tail;
} ruv_adapter;

static uv_once_t ruv_once = UV_ONCE_INIT;
static uv_key_t ruv_loop_key;  // which loop the calling thread runs

static void ruv_init_once(void)
{
    if (uv_key_create(&ruv_loop_key) != 0) abort();
}

void ruvnats_libuv_init(void)
{
    uv_once(&ruv_once, ruv_init_once);
}

void ruvnats_libuv_set_thread_loop(uv_loop_t *loop)
{
    ruvnats_libuv_init();
    uv_key_set(&ruv_loop_key, loop);
}

static bool ruv_on_loop_thread(ruv_adapter *a)
{
    return uv_key_get(&ruv_loop_key) == (void *) a->loop;
}

// MARK: - Applying requests (loop thread)

static void ruv_poll_closed(uv_handle_t *handle)
{
    ruv_poll *p = (ruv_poll *) handle;
    close(p->fd);
    free(p);
}

static void ruv_close_poll(ruv_poll *p)
{
    if (p != NULL) uv_close((uv_handle_t *) &p->handle, ruv_poll_closed);
}

static void ruv_on_poll(uv_poll_t *handle, int status, int events)
{
    ruv_adapter *a = handle->data;
    if (a->poll == NULL || &a->poll->handle != handle) {
        // A socket cnats has replaced: its readiness is not the new socket's.
        uv_poll_stop(handle);
        return;
    }
    natsConnection *nc = a->nc;
    if (status < 0) {
        // libuv stopped this handle itself before calling (uv__poll_io does so on POLLERR)
        // and cnats knows nothing of that: a read lets cnats see the socket's error, and
        // unless cnats then stopped polling (a broken connection) the handle is started
        // again. Without the restart a socket error cnats did not take as fatal left the
        // socket unpolled for good: replies and pings went unread until cnats's ping timer
        // declared the connection stale (logcast's leader-kill test, every run).
        natsConnection_ProcessReadEvent(nc);
        if (a->poll != NULL && &a->poll->handle == handle && !a->detached && a->events != 0)
            uv_poll_start(handle, a->events, ruv_on_poll);
        return;
    }
    if (events & UV_READABLE) natsConnection_ProcessReadEvent(nc);
    // (cnats may have detached in the read: then it ignores the write event.)
    if (events & UV_WRITABLE) natsConnection_ProcessWriteEvent(nc);
}

static natsStatus ruv_apply_attach(ruv_adapter *a, int fd)
{
    ruv_close_poll(a->poll);
    a->poll = NULL;
    ruv_poll *p = malloc(sizeof(ruv_poll));
    if (p == NULL) {
        close(fd);
        return NATS_NO_MEMORY;
    }
    p->fd = fd;
    if (uv_poll_init_socket(a->loop, &p->handle, fd) != 0) {
        close(fd);
        free(p);
        return NATS_ERR;
    }
    p->handle.data = a;
    a->poll = p;
    a->events = UV_READABLE;
    return uv_poll_start(&p->handle, UV_READABLE, ruv_on_poll) == 0 ? NATS_OK : NATS_ERR;
}

static natsStatus ruv_apply_update(ruv_adapter *a, int type, bool add)
{
    if (a->poll == NULL) return NATS_OK;
    if (type == RUV_READ && !add) {
        // cnats stops polling this socket for good (_evStopPolling, then it closes it).
        a->events = 0;
        uv_poll_stop(&a->poll->handle);
        shutdown(a->poll->fd, SHUT_RDWR);
        return NATS_OK;
    }
    int bit = (type == RUV_READ) ? UV_READABLE : UV_WRITABLE;
    if (add) a->events |= bit; else a->events &= ~bit;
    int rc = a->events ? uv_poll_start(&a->poll->handle, a->events, ruv_on_poll) : uv_poll_stop(&a->poll->handle);
    return rc == 0 ? NATS_OK : NATS_ERR;
}

static void ruv_free_events(ruv_event *event)
{
    while (event != NULL) {
        ruv_event *next = event->next;
        if (event->type == RUV_ATTACH) close(event->fd);
        free(event);
        event = next;
    }
}

static void ruv_wakeup_closed(uv_handle_t *handle)
{
    ruv_adapter *a = handle->data;
    ruv_free_events(a->head);
    uv_mutex_destroy(&a->lock);
    free(a->wakeup);
    free(a);
}

static void ruv_apply_detach(ruv_adapter *a)
{
    if (a->detached) return;
    a->detached = true;
    ruv_close_poll(a->poll);
    a->poll = NULL;
    uv_close((uv_handle_t *) a->wakeup, ruv_wakeup_closed);
}

// The loop's wake-up: applies every queued request in order.
static void ruv_on_wakeup(uv_async_t *handle)
{
    ruv_adapter *a = handle->data;
    natsStatus s = NATS_OK;
    while (!a->detached && s == NATS_OK) {
        uv_mutex_lock(&a->lock);
        ruv_event *event = a->head;
        if (event != NULL) {
            a->head = event->next;
            if (a->head == NULL) a->tail = NULL;
        }
        uv_mutex_unlock(&a->lock);
        if (event == NULL) return;
        switch (event->type) {
        case RUV_ATTACH:
            s = ruv_apply_attach(a, event->fd);
            break;
        case RUV_READ:
        case RUV_WRITE:
            s = ruv_apply_update(a, event->type, event->add);
            break;
        case RUV_DETACH:
            ruv_apply_detach(a);
            break;
        default:
            s = NATS_ERR;
        }
        free(event);
    }
    // As cnats's adapter does: a socket that cannot be polled ends the connection (this
    // may run after cnats closed it; see ruvnats_adapter_handle).
    if (s != NATS_OK) natsConnection_Close(a->nc);
}

// MARK: - cnats's callbacks (any thread)

static natsStatus ruv_enqueue(ruv_adapter *a, int type, bool add, int fd)
{
    ruv_event *event = malloc(sizeof(ruv_event));
    if (event == NULL) return NATS_NO_MEMORY;
    event->type = type;
    event->add = add;
    event->fd = fd;
    event->next = NULL;
    uv_mutex_lock(&a->lock);
    if (a->tail != NULL) a->tail->next = event; else a->head = event;
    a->tail = event;
    uv_mutex_unlock(&a->lock);
    return uv_async_send(a->wakeup) == 0 ? NATS_OK : NATS_ERR;
}

// Whether a request must be queued: made off the loop thread, or others still wait.
static bool ruv_must_queue(ruv_adapter *a)
{
    if (!ruv_on_loop_thread(a)) return true;
    uv_mutex_lock(&a->lock);
    bool waiting = a->head != NULL;
    uv_mutex_unlock(&a->lock);
    return waiting;
}

// Which wake-up handle the adapter made for which connection. Why: the adapter calls
// natsConnection_Close(nc) from its wake-up callback when a queued poll update fails, so
// a connection may be destroyed only once that handle has left the loop. A short list:
// one entry per open connection.
typedef struct ruvnats_entry {
    natsConnection *nc;
    uv_handle_t *handle;
    struct ruvnats_entry *next;
} ruvnats_entry;

static ruvnats_entry *ruvnats_entries = NULL;
static uv_mutex_t ruvnats_entries_lock;
static uv_once_t ruvnats_entries_once = UV_ONCE_INIT;

static void ruvnats_entries_init(void)
{
    if (uv_mutex_init(&ruvnats_entries_lock) != 0) abort();
}

static void ruv_remember(natsConnection *nc, uv_handle_t *handle)
{
    ruvnats_entry *entry = malloc(sizeof(ruvnats_entry));
    if (entry == NULL) return;
    entry->nc = nc;
    entry->handle = handle;
    uv_once(&ruvnats_entries_once, ruvnats_entries_init);
    uv_mutex_lock(&ruvnats_entries_lock);
    entry->next = ruvnats_entries;
    ruvnats_entries = entry;
    uv_mutex_unlock(&ruvnats_entries_lock);
}

static natsStatus ruv_attach(void **userData, void *loop, natsConnection *nc, natsSock socket)
{
    ruv_adapter *a = *userData;
    if (a == NULL) {
        // The first attach happens in natsConnection_Connect, which must run on the loop's
        // thread (the handles are made here).
        if (uv_key_get(&ruv_loop_key) != loop) return NATS_ILLEGAL_STATE;
        a = calloc(1, sizeof(ruv_adapter));
        if (a == NULL) return NATS_NO_MEMORY;
        a->wakeup = malloc(sizeof(uv_async_t));
        if (a->wakeup == NULL || uv_mutex_init(&a->lock) != 0) {
            free(a->wakeup);
            free(a);
            return NATS_ERR;
        }
        if (uv_async_init((uv_loop_t *) loop, a->wakeup, ruv_on_wakeup) != 0) {
            uv_mutex_destroy(&a->lock);
            free(a->wakeup);
            free(a);
            return NATS_ERR;
        }
        a->nc = nc;
        a->loop = loop;
        a->wakeup->data = a;
        *userData = a;
        ruv_remember(nc, (uv_handle_t *) a->wakeup);
    }
    // Duplicated now, on cnats's thread, while cnats's descriptor is surely open.
    int fd = fcntl(socket, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return NATS_SYS_ERROR;
    if (ruv_must_queue(a)) return ruv_enqueue(a, RUV_ATTACH, true, fd);
    return ruv_apply_attach(a, fd);
}

static natsStatus ruv_read(void *userData, bool add)
{
    ruv_adapter *a = userData;
    if (ruv_must_queue(a)) return ruv_enqueue(a, RUV_READ, add, -1);
    return ruv_apply_update(a, RUV_READ, add);
}

static natsStatus ruv_write(void *userData, bool add)
{
    ruv_adapter *a = userData;
    if (ruv_must_queue(a)) return ruv_enqueue(a, RUV_WRITE, add, -1);
    return ruv_apply_update(a, RUV_WRITE, add);
}

static natsStatus ruv_detach(void *userData)
{
    ruv_adapter *a = userData;
    if (ruv_must_queue(a)) return ruv_enqueue(a, RUV_DETACH, true, -1);
    ruv_apply_detach(a);
    return NATS_OK;
}

// MARK: - For NATSConnection.swift

uv_handle_t *ruvnats_adapter_handle(natsConnection *nc)
{
    uv_handle_t *found = NULL;
    uv_once(&ruvnats_entries_once, ruvnats_entries_init);
    uv_mutex_lock(&ruvnats_entries_lock);
    for (ruvnats_entry *e = ruvnats_entries; e != NULL; e = e->next) {
        if (e->nc == nc) { found = e->handle; break; }
    }
    uv_mutex_unlock(&ruvnats_entries_lock);
    return found;
}

long ruvnats_unsent_bytes(natsConnection *nc)
{
    int buffered = natsConnection_Buffered(nc);
    if (buffered < 0) return -1;
    long total = buffered;
    uv_handle_t *handle = ruvnats_adapter_handle(nc);
    ruv_adapter *a = handle != NULL ? handle->data : NULL;
    if (a != NULL && a->poll != NULL) {
        // The socket's send queue: written, not yet acknowledged by the server's kernel.
        int queued = 0;
        if (ioctl(a->poll->fd, SIOCOUTQ, &queued) == 0 && queued > 0) total += queued;
    }
    return total;
}

void ruvnats_adapter_forget(natsConnection *nc)
{
    uv_once(&ruvnats_entries_once, ruvnats_entries_init);
    uv_mutex_lock(&ruvnats_entries_lock);
    for (ruvnats_entry **link = &ruvnats_entries; *link != NULL; link = &(*link)->next) {
        if ((*link)->nc == nc) {
            ruvnats_entry *gone = *link;
            *link = gone->next;
            free(gone);
            break;
        }
    }
    uv_mutex_unlock(&ruvnats_entries_lock);
}

typedef struct { uv_handle_t *wanted; bool found; } ruvnats_search;

static void ruvnats_walk(uv_handle_t *handle, void *arg)
{
    ruvnats_search *search = arg;
    if (handle == search->wanted) search->found = true;
}

bool ruvnats_loop_has_handle(uv_loop_t *loop, uv_handle_t *handle)
{
    ruvnats_search search = { handle, false };
    uv_walk(loop, ruvnats_walk, &search);
    return search.found;
}

natsStatus ruvnats_options_set_libuv_loop(natsOptions *opts, uv_loop_t *loop)
{
    return natsOptions_SetEventLoop(opts, (void *) loop, ruv_attach, ruv_read, ruv_write, ruv_detach);
}

// Why this target exists: cnats ships its libuv adapter as a header, nats/adapters/libuv.h,
// that *defines* non-static functions (natsLibuv_Attach, natsLibuv_Read, ...) and a static
// thread key. Included from two translation units it would give duplicate symbols (and two
// keys that disagree about which thread runs the loop), so it is included here, exactly
// once, and reached through the small functions of CNATSLibuv.h.
#include <nats/adapters/libuv.h>
#include <stdlib.h>
#include "CNATSLibuv.h"

void ruvnats_libuv_init(void)
{
    natsLibuv_Init();
}

void ruvnats_libuv_set_thread_loop(uv_loop_t *loop)
{
    natsLibuv_SetThreadLocalLoop(loop);
}

// Which wake-up handle the adapter made for which connection. Why: the adapter calls
// natsConnection_Close(nc) from its own async callback when a queued poll update fails
// (after cnats closed the socket, that happens), so a connection may be destroyed only once
// that handle has left the loop. A short list: one entry per open connection.
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

// The adapter's attach, recording its wake-up handle on the first attach.
static natsStatus ruvnats_attach(void **userData, void *loop, natsConnection *nc, natsSock socket)
{
    bool first = (*userData == NULL);
    natsStatus s = natsLibuv_Attach(userData, loop, nc, socket);
    if (s == NATS_OK && first && *userData != NULL) {
        ruvnats_entry *entry = malloc(sizeof(ruvnats_entry));
        if (entry != NULL) {
            entry->nc = nc;
            entry->handle = (uv_handle_t *) ((natsLibuvEvents *) *userData)->scheduler;
            uv_once(&ruvnats_entries_once, ruvnats_entries_init);
            uv_mutex_lock(&ruvnats_entries_lock);
            entry->next = ruvnats_entries;
            ruvnats_entries = entry;
            uv_mutex_unlock(&ruvnats_entries_lock);
        }
    }
    return s;
}

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
    return natsOptions_SetEventLoop(opts, (void *) loop,
                                    ruvnats_attach, natsLibuv_Read,
                                    natsLibuv_Write, natsLibuv_Detach);
}

// The one header Swift sees for cnats (Debian libnats-dev 3.4.1): the NATS and JetStream
// client API. The libuv adapter is not here: it is the CNATSLibuv target's own (it replaces
// cnats's nats/adapters/libuv.h; CNATSLibuv/adapter.c says why).
#ifndef REACTIVEUV_CNATS_SHIM_H
#define REACTIVEUV_CNATS_SHIM_H
#include <nats/nats.h>
#endif

// The one header Swift sees for cnats (Debian libnats-dev 3.4.1): the NATS and JetStream
// client API. The libuv adapter is not here: nats/adapters/libuv.h defines non-static
// functions, so it is compiled once, in the CNATSLibuv target, and reached through that
// target's header.
#ifndef REACTIVEUV_CNATS_SHIM_H
#define REACTIVEUV_CNATS_SHIM_H
#include <nats/nats.h>
#endif

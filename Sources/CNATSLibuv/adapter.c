// Why this target exists: cnats ships its libuv adapter as a header, nats/adapters/libuv.h,
// that *defines* non-static functions (natsLibuv_Attach, natsLibuv_Read, ...) and a static
// thread key. Included from two translation units it would give duplicate symbols (and two
// keys that disagree about which thread runs the loop), so it is included here, exactly
// once, and reached through the three small functions of CNATSLibuv.h.
#include <nats/adapters/libuv.h>
#include "CNATSLibuv.h"

void ruvnats_libuv_init(void)
{
    natsLibuv_Init();
}

void ruvnats_libuv_set_thread_loop(uv_loop_t *loop)
{
    natsLibuv_SetThreadLocalLoop(loop);
}

natsStatus ruvnats_options_set_libuv_loop(natsOptions *opts, uv_loop_t *loop)
{
    return natsOptions_SetEventLoop(opts, (void *) loop,
                                    natsLibuv_Attach, natsLibuv_Read,
                                    natsLibuv_Write, natsLibuv_Detach);
}

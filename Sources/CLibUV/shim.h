// The one header Swift sees for libuv. It exists so the system library target has a
// single umbrella: everything ReactiveUV uses from libuv comes through <uv.h>.
#ifndef REACTIVEUV_CLIBUV_SHIM_H
#define REACTIVEUV_CLIBUV_SHIM_H
#include <uv.h>
#endif

// Compiled into libreactiveuv.so only to check, at every build, that reactiveuv.h is
// self-contained C and that its constants hold what the documentation promises. It
// defines no symbols.
#include "reactiveuv.h"

#include <uv.h>

_Static_assert(RUV_VERSION_HEX == ((RUV_VERSION_MAJOR << 16) | (RUV_VERSION_MINOR << 8) | RUV_VERSION_PATCH),
               "version macros");
_Static_assert(RUV_ERRNO_MIN <= RUV_EWRONGTHREAD && RUV_EWRONGTHREAD <= RUV_ERRNO_MAX, "reserved range");
_Static_assert(RUV_ERRNO_MIN <= RUV_EUNKNOWN && RUV_EUNKNOWN <= RUV_ERRNO_MAX, "reserved range");
// libuv's own codes (negated errno values, -3000..-3014 for getaddrinfo, UV_EOF = -4095)
// never fall into our range.
_Static_assert(UV_EOF < RUV_ERRNO_MIN || UV_EOF > RUV_ERRNO_MAX, "libuv codes outside our range");
_Static_assert(UV_EAI_ADDRFAMILY > RUV_ERRNO_MAX, "libuv codes outside our range");

// The one header Swift sees for zlib (Debian's zlib1g-dev): WebSocket's permessage-deflate.
#ifndef REACTIVEUV_CZLIB_SHIM_H
#define REACTIVEUV_CZLIB_SHIM_H
#include <zlib.h>
#endif

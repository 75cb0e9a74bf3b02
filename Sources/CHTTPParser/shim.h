// The one header Swift sees for Node's http_parser 2.9 (Debian's libhttp-parser-dev, which
// ships no pkg-config file). ReactiveUVHTTP keeps every use of it behind one internal type,
// so the parser can be swapped.
#ifndef REACTIVEUV_CHTTPPARSER_SHIM_H
#define REACTIVEUV_CHTTPPARSER_SHIM_H
#include <http_parser.h>
#endif

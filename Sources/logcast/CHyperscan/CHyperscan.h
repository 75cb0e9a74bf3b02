// Hyperscan (Debian libhyperscan-dev, pkg-config libhs): the matching engine behind GREP.
// A system library target: no code, only the header SwiftPM needs to import <hs.h>.
#include <hs/hs.h>

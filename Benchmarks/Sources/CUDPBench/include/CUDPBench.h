// The C side of udp-tls-bench: a plain libuv UDP echo server (the baseline ruv-udp-echo is
// measured against) and a UDP load generator that checks every datagram it gets back.
#ifndef CUDPBENCH_H
#define CUDPBENCH_H

#include <stdint.h>

/// Runs a libuv UDP echo server on 127.0.0.1:0 until SIGTERM/SIGINT; prints
/// "listening on 127.0.0.1:PORT" once bound. Returns 0, or a libuv error code.
int cub_udp_echo_server(void);

/// What one load run saw.
typedef struct {
    uint64_t sent;       ///< datagrams sent
    uint64_t received;   ///< distinct datagrams that came back intact
    uint64_t corrupt;    ///< datagrams that came back with wrong bytes (never expected)
    uint64_t duplicates; ///< datagrams that came back twice
    uint64_t stalls;     ///< times the window was given up on (datagrams presumed lost)
    uint64_t ns;         ///< wall time from the first send to the last answer or give-up
} cub_load_result;

/// Sends `count` numbered datagrams of `size` bytes (at least 8) to 127.0.0.1:`port`,
/// keeping at most `window` unanswered, and verifies each echo byte for byte. When nothing
/// comes back for `stall_ms`, the unanswered ones are presumed lost (loopback drops under
/// overload) and sending goes on. Returns 0, or -errno.
int cub_udp_load(int port, uint64_t count, int size, int window, int stall_ms, cub_load_result *result);

#endif

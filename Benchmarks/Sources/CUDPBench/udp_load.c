// The UDP load generator: numbered datagrams out, each echo checked byte for byte, loss
// counted. Plain sockets and poll(2), so the generator costs both servers the same.
#include "CUDPBench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t cub__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/// Datagram `seq`: its number (8 bytes), then bytes that depend on it and their position.
static void cub__fill(unsigned char *p, uint64_t seq, int size) {
    memcpy(p, &seq, 8);
    for (int i = 8; i < size; i++) p[i] = (unsigned char)(seq * 31 + (uint64_t)i * 7);
}

int cub_udp_load(int port, uint64_t count, int size, int window, int stall_ms, cub_load_result *r) {
    if (size < 8 || size > 65000 || window < 1) return -EINVAL;
    memset(r, 0, sizeof *r);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    int big = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    unsigned char *seen = calloc(count, 1);
    unsigned char *out = malloc((size_t)size), *in = malloc(65536), *expect = malloc((size_t)size);
    uint64_t next = 0, presumed_lost = 0;
    uint64_t start = cub__now();
    while (r->received + presumed_lost < count) {
        while (next < count && next - r->received - presumed_lost < (uint64_t)window) {
            cub__fill(out, next, size);
            ssize_t n = send(fd, out, (size_t)size, 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == ENOBUFS || errno == ECONNREFUSED) break;
                break;
            }
            next++;
            r->sent++;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ready = poll(&pfd, 1, stall_ms);
        if (ready == 0) {
            // Nothing for stall_ms: what is unanswered is lost; go on with a fresh window.
            r->stalls++;
            presumed_lost = next - r->received;
            if (next == count) break;
            continue;
        }
        for (;;) {
            ssize_t n = recv(fd, in, 65536, MSG_DONTWAIT);
            if (n < 0) break;
            uint64_t seq;
            if (n != size) { r->corrupt++; continue; }
            memcpy(&seq, in, 8);
            if (seq >= next) { r->corrupt++; continue; }
            cub__fill(expect, seq, size);
            if (memcmp(in, expect, (size_t)size) != 0) { r->corrupt++; continue; }
            if (seen[seq]) { r->duplicates++; continue; }
            seen[seq] = 1;
            r->received++;
            if (presumed_lost > 0 && r->received + presumed_lost > next) presumed_lost--;  // late, not lost
        }
    }
    r->ns = cub__now() - start;
    free(seen), free(out), free(in), free(expect);
    close(fd);
    return 0;
}

/* Load for the WebSocket echo row: N clients, each with one masked 64-byte text message in
 * flight, for a fixed time; counts the echoes that came back whole and checks each one.
 *
 *     cc -O2 ws-load.c -o ws-load && ./ws-load PORT CLIENTS SECONDS [SIZE]
 *
 * Prints "ws-load: R round trips/s over N clients (M messages, 0 bad)". One thread on
 * epoll: the server is what is measured, so the generator does as little as it can (poll()
 * registers and scans every socket per wake-up). Its own read and write per message still
 * fill its core about as fast a server's fills: run-http-bench.sh prints the server's CPU
 * per message beside the rate for that reason. The
 * handshake is RFC 6455's, with a fixed key (the server's answer is not checked beyond its
 * status line: this is a load generator, the tests check handshakes).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CLIENTS = 1024 };

typedef struct {
    int fd;
    unsigned char in[4096];
    size_t have;
} client_t;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) { perror("connect"); exit(1); }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { perror("write"); exit(1); }
        p += w; n -= (size_t)w;
    }
}

static void handshake(int fd, int port) {
    char req[512];
    int n = snprintf(req, sizeof(req),
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", port);
    write_all(fd, (unsigned char *)req, (size_t)n);
    char buf[2048];
    size_t have = 0;
    while (have < sizeof(buf) - 1) {
        ssize_t r = read(fd, buf + have, 1); /* byte by byte: nothing past the head is read */
        if (r <= 0) { fprintf(stderr, "ws-load: handshake failed\n"); exit(1); }
        have += (size_t)r;
        buf[have] = 0;
        if (have >= 4 && memcmp(buf + have - 4, "\r\n\r\n", 4) == 0) break;
    }
    if (strncmp(buf, "HTTP/1.1 101", 12) != 0) { fprintf(stderr, "ws-load: not upgraded: %.40s\n", buf); exit(1); }
}

/* A masked text frame of `size` bytes ('a'..'z' repeating). */
static size_t make_frame(unsigned char *f, size_t size) {
    size_t h = 0;
    f[h++] = 0x81;
    if (size < 126) f[h++] = 0x80 | (unsigned char)size;
    else { f[h++] = 0x80 | 126; f[h++] = (unsigned char)(size >> 8); f[h++] = (unsigned char)size; }
    unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
    memcpy(f + h, mask, 4); h += 4;
    for (size_t i = 0; i < size; i++) f[h + i] = (unsigned char)('a' + i % 26) ^ mask[i % 4];
    return h + size;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: ws-load PORT CLIENTS SECONDS [SIZE]\n"); return 2; }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    double seconds = atof(argv[3]);
    size_t size = argc > 4 ? (size_t)atoi(argv[4]) : 64;
    if (n < 1 || n > MAX_CLIENTS || size > 1000) { fprintf(stderr, "ws-load: bad arguments\n"); return 2; }
    static client_t clients[MAX_CLIENTS];
    int ep = epoll_create1(0);
    if (ep < 0) { perror("epoll_create1"); return 1; }
    unsigned char frame[1100];
    size_t frame_len = make_frame(frame, size);
    size_t echo_len = size + (size < 126 ? 2 : 4);
    for (int i = 0; i < n; i++) {
        clients[i].fd = connect_to(port);
        handshake(clients[i].fd, port);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, clients[i].fd, &ev) != 0) { perror("epoll_ctl"); return 1; }
    }
    for (int i = 0; i < n; i++) write_all(clients[i].fd, frame, frame_len);
    long long done = 0, bad = 0;
    double start = now(), end = start + seconds;
    while (now() < end) {
        struct epoll_event events[MAX_CLIENTS];
        int ready = epoll_wait(ep, events, n, 100);
        if (ready < 0 && errno != EINTR) { perror("epoll_wait"); return 1; }
        for (int e = 0; e < ready; e++) {
            client_t *c = &clients[events[e].data.u32];
            ssize_t r = read(c->fd, c->in + c->have, sizeof(c->in) - c->have);
            if (r <= 0) { fprintf(stderr, "ws-load: server closed a client\n"); return 1; }
            c->have += (size_t)r;
            while (c->have >= echo_len) {
                /* An unmasked text frame holding the same bytes. */
                int ok = c->in[0] == 0x81 && (c->in[1] & 0x80) == 0;
                for (size_t k = 0; ok && k < size; k++) ok = c->in[echo_len - size + k] == (unsigned char)('a' + k % 26);
                if (!ok) bad++;
                memmove(c->in, c->in + echo_len, c->have - echo_len);
                c->have -= echo_len;
                done++;
                write_all(c->fd, frame, frame_len);
            }
        }
    }
    double elapsed = now() - start;
    printf("ws-load: %.0f round trips/s over %d clients (%lld messages, %lld bad)\n", done / elapsed, n, done, bad);
    return bad == 0 ? 0 : 1;
}

// A plain libuv UDP echo server: the C baseline of ruv-udp-echo. What a careful C
// programmer would write: recvmmsg into one static buffer, each datagram sent straight back
// with uv_udp_try_send, and only when the kernel refuses (EAGAIN) copied into a uv_udp_send.
#include "CUDPBench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define CUB_SLOTS 16
static char cub__buffer[CUB_SLOTS * 64 * 1024];

typedef struct {
    uv_udp_send_t req;
    char bytes[];
} cub__send_t;

static void cub__alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    (void)handle, (void)suggested;
    *buf = uv_buf_init(cub__buffer, sizeof cub__buffer);
}

static void cub__sent(uv_udp_send_t *req, int status) {
    (void)status;
    free(req);
}

static void cub__received(uv_udp_t *udp, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr, unsigned flags) {
    if (flags & UV_UDP_MMSG_FREE) return;
    if (nread < 0 || addr == NULL) return;
    uv_buf_t out = uv_buf_init(buf->base, (unsigned)nread);
    int rc = uv_udp_try_send(udp, &out, 1, addr);
    if (rc == UV_EAGAIN) {
        cub__send_t *send = malloc(sizeof *send + (size_t)nread);
        if (send == NULL) return;
        memcpy(send->bytes, buf->base, (size_t)nread);
        uv_buf_t copy = uv_buf_init(send->bytes, (unsigned)nread);
        if (uv_udp_send(&send->req, udp, &copy, 1, addr, cub__sent) < 0) free(send);
    }
}

static void cub__stop(uv_signal_t *signal, int signum) {
    (void)signum;
    uv_stop(signal->loop);
}

int cub_udp_echo_server(void) {
    uv_loop_t *loop = uv_default_loop();
    static uv_udp_t udp;
    static uv_signal_t term, intr;
    int rc = uv_udp_init_ex(loop, &udp, AF_INET | UV_UDP_RECVMMSG);
    if (rc < 0) return rc;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    if ((rc = uv_udp_bind(&udp, (const struct sockaddr *)&addr, 0)) < 0) return rc;
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_udp_getsockname(&udp, (struct sockaddr *)&bound, &len);
    printf("listening on 127.0.0.1:%d\n", ntohs(bound.sin_port));
    fflush(stdout);
    if ((rc = uv_udp_recv_start(&udp, cub__alloc, cub__received)) < 0) return rc;
    uv_signal_init(loop, &term);
    uv_signal_start(&term, cub__stop, SIGTERM);
    uv_signal_init(loop, &intr);
    uv_signal_start(&intr, cub__stop, SIGINT);
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
}

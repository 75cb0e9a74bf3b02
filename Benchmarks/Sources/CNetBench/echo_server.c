// A plain libuv TCP echo server: the C baseline ruv-echo is measured against.
//
// It does what ruv-echo does, the way a careful C programmer would: one reused 64 KiB read
// buffer per connection, each read written straight back with uv_try_write, and only what
// the kernel does not take copied into a uv_write request. End of stream from the client:
// shut our side down after the queued writes, then close.
#include "CNetBench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

typedef struct {
    uv_tcp_t tcp;           // first: the handle's address is the connection's
    char buffer[64 * 1024]; // reused by every read
} cnb__conn_t;

typedef struct {
    uv_write_t req;         // first: freed as one block with the bytes that follow
    char bytes[];
} cnb__write_t;

static void cnb__free_on_close(uv_handle_t *handle) { free(handle); }

static void cnb__alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    cnb__conn_t *conn = (cnb__conn_t *)handle;
    *buf = uv_buf_init(conn->buffer, sizeof conn->buffer);
}

static void cnb__written(uv_write_t *req, int status) {
    if (status < 0 && status != UV_ECANCELED) uv_close((uv_handle_t *)req->handle, cnb__free_on_close);
    free(req);
}

static void cnb__shut(uv_shutdown_t *req, int status) {
    (void)status;
    if (!uv_is_closing((uv_handle_t *)req->handle)) uv_close((uv_handle_t *)req->handle, cnb__free_on_close);
    free(req);
}

static void cnb__read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    if (nread > 0) {
        uv_buf_t out = uv_buf_init(buf->base, (unsigned)nread);
        int written = uv_try_write(stream, &out, 1);
        if (written == nread) return;
        if (written < 0 && written != UV_EAGAIN) {
            uv_close((uv_handle_t *)stream, cnb__free_on_close);
            return;
        }
        size_t offset = written > 0 ? (size_t)written : 0;
        size_t rest = (size_t)nread - offset;
        cnb__write_t *w = malloc(sizeof *w + rest);
        memcpy(w->bytes, buf->base + offset, rest);
        uv_buf_t queued = uv_buf_init(w->bytes, (unsigned)rest);
        if (uv_write(&w->req, stream, &queued, 1, cnb__written) < 0) {
            free(w);
            uv_close((uv_handle_t *)stream, cnb__free_on_close);
        }
    } else if (nread == UV_EOF) {
        uv_shutdown_t *req = malloc(sizeof *req);
        if (uv_shutdown(req, stream, cnb__shut) < 0) {
            free(req);
            uv_close((uv_handle_t *)stream, cnb__free_on_close);
        }
    } else if (nread < 0) {
        uv_close((uv_handle_t *)stream, cnb__free_on_close);
    }
}

static void cnb__accept(uv_stream_t *server, int status) {
    if (status < 0) return;
    cnb__conn_t *conn = malloc(sizeof *conn);
    uv_tcp_init(server->loop, &conn->tcp);
    conn->tcp.data = conn;  // marks a heap connection for the shutdown walk
    if (uv_accept(server, (uv_stream_t *)&conn->tcp) < 0) {
        uv_close((uv_handle_t *)&conn->tcp, cnb__free_on_close);
        return;
    }
    uv_tcp_nodelay(&conn->tcp, 1);
    uv_read_start((uv_stream_t *)&conn->tcp, cnb__alloc, cnb__read);
}

static void cnb__close_walk(uv_handle_t *handle, void *arg) {
    (void)arg;
    if (!uv_is_closing(handle)) uv_close(handle, handle->data ? cnb__free_on_close : NULL);
}

static void cnb__stop(uv_signal_t *handle, int signum) {
    (void)signum;
    uv_stop(handle->loop);
}

int cnb_echo_server_run(const char *host, int port) {
    uv_loop_t loop;
    int rc = uv_loop_init(&loop);
    if (rc < 0) return rc;
    uv_tcp_t server;
    uv_tcp_init(&loop, &server);
    server.data = NULL;
    struct sockaddr_storage address;
    if (strchr(host, ':'))
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&address);
    else
        rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&address);
    if (rc == 0) rc = uv_tcp_bind(&server, (const struct sockaddr *)&address, 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&server, 1024, cnb__accept);
    if (rc < 0) {
        fprintf(stderr, "c-echo: %s during listen on %s:%d\n", uv_err_name(rc), host, port);
        uv_close((uv_handle_t *)&server, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        return rc;
    }
    struct sockaddr_storage bound;
    int length = sizeof bound;
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &length);
    char name[64] = "?";
    uv_ip_name((const struct sockaddr *)&bound, name, sizeof name);
    int bound_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                        : ((struct sockaddr_in *)&bound)->sin_port);
    printf(bound.ss_family == AF_INET6 ? "listening on [%s]:%d\n" : "listening on %s:%d\n", name, bound_port);
    fflush(stdout);

    uv_signal_t sigint, sigterm;
    uv_signal_init(&loop, &sigint);
    uv_signal_init(&loop, &sigterm);
    sigint.data = sigterm.data = NULL;
    uv_signal_start(&sigint, cnb__stop, SIGINT);
    uv_signal_start(&sigterm, cnb__stop, SIGTERM);
    uv_run(&loop, UV_RUN_DEFAULT);

    // Connections are malloc'd and freed in their close callback; the rest live here.
    uv_walk(&loop, cnb__close_walk, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return 0;
}

/*
 * uv-echo: the plain C libuv TCP echo server the echo benchmark compares poll-host with.
 *
 *   uv-echo [port] [-t]   (127.0.0.1; port 0 lets the kernel choose)
 *
 * Prints "listening on 127.0.0.1:PORT" and echoes every connection until it ends, the way
 * libuv's own benchmark echo server does: one malloc'd buffer per read, one uv_write per
 * read, freed in the write callback; shutdown once the peer has sent EOF.
 *
 * With -t it is tuned the way ReactiveUV's streams are: reads into one buffer per
 * connection, and each chunk goes out with uv_try_write first; only what the kernel does
 * not take at once is copied into a uv_write request.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

typedef struct {
    uv_write_t req;
    uv_buf_t buf;
} write_req_t;

static int tuned;

/* A connection of the tuned mode: its read buffer lives with it. */
typedef struct {
    uv_tcp_t tcp;
    char buffer[65536];
} conn_t;

static void on_close(uv_handle_t *handle) { free(handle); }

static void on_shutdown(uv_shutdown_t *req, int status) {
    (void)status;
    uv_close((uv_handle_t *)req->handle, on_close);
    free(req);
}

static void on_written(uv_write_t *req, int status) {
    write_req_t *w = (write_req_t *)req;
    free(w->buf.base);
    free(w);
    (void)status;
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    if (tuned) {
        conn_t *c = (conn_t *)handle;
        buf->base = c->buffer;
        buf->len = sizeof c->buffer;
        return;
    }
    buf->base = malloc(suggested);
    buf->len = suggested;
}

/* The tuned mode's read callback: try the write at once; queue a copy of the rest. */
static void on_read_tuned(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf) {
    if (n < 0) {
        if (n == UV_EOF) {
            uv_shutdown_t *req = malloc(sizeof *req);
            if (uv_shutdown(req, stream, on_shutdown) == 0) return;
            free(req);
        }
        uv_close((uv_handle_t *)stream, on_close);
        return;
    }
    if (n == 0) return;
    uv_buf_t chunk = uv_buf_init(buf->base, (unsigned int)n);
    int written = uv_try_write(stream, &chunk, 1);
    if (written == n) return;
    if (written < 0 && written != UV_EAGAIN) {
        uv_close((uv_handle_t *)stream, on_close);
        return;
    }
    if (written < 0) written = 0;
    write_req_t *w = malloc(sizeof *w);
    size_t rest = (size_t)n - (size_t)written;
    w->buf = uv_buf_init(malloc(rest), (unsigned int)rest);
    memcpy(w->buf.base, buf->base + written, rest);
    if (uv_write(&w->req, stream, &w->buf, 1, on_written) < 0) {
        free(w->buf.base);
        free(w);
        uv_close((uv_handle_t *)stream, on_close);
    }
}

static void on_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf) {
    if (n < 0) {
        free(buf->base);
        if (n == UV_EOF) {
            uv_shutdown_t *req = malloc(sizeof *req);
            if (uv_shutdown(req, stream, on_shutdown) == 0) return;
            free(req);
        }
        uv_close((uv_handle_t *)stream, on_close);
        return;
    }
    if (n == 0) {
        free(buf->base);
        return;
    }
    write_req_t *w = malloc(sizeof *w);
    w->buf = uv_buf_init(buf->base, (unsigned int)n);
    if (uv_write(&w->req, stream, &w->buf, 1, on_written) < 0) {
        free(buf->base);
        free(w);
        uv_close((uv_handle_t *)stream, on_close);
    }
}

static void on_connection(uv_stream_t *server, int status) {
    if (status < 0) return;
    uv_tcp_t *client = malloc(tuned ? sizeof(conn_t) : sizeof(uv_tcp_t));
    uv_tcp_init(server->loop, client);
    if (uv_accept(server, (uv_stream_t *)client) == 0) {
        uv_tcp_nodelay(client, 1);
        uv_read_start((uv_stream_t *)client, on_alloc, tuned ? on_read_tuned : on_read);
    } else {
        uv_close((uv_handle_t *)client, on_close);
    }
}

int main(int argc, char **argv) {
    uv_loop_t *loop = uv_default_loop();
    uv_tcp_t server;
    struct sockaddr_in addr;
    int port = 7071;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0) tuned = 1;
        else port = atoi(argv[i]);
    }
    uv_ip4_addr("127.0.0.1", port, &addr);
    uv_tcp_init(loop, &server);
    int rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&server, 511, on_connection);
    if (rc < 0) {
        fprintf(stderr, "uv-echo: %s\n", uv_strerror(rc));
        return 1;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len);
    printf("listening on 127.0.0.1:%d\n", ntohs(((struct sockaddr_in *)&bound)->sin_port));
    fflush(stdout);
    return uv_run(loop, UV_RUN_DEFAULT);
}

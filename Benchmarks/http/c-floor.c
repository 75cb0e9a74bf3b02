/* The floor of the http rows: what libuv and http_parser cost with nothing else.
 *
 * One thread, one loop, keep-alive and pipelining: every request parsed from a read is
 * answered with the same 13-byte `Hello, World!` response, and the answers to one read's
 * requests leave in one uv_write (as a pipelining-aware server would). No routing, no
 * headers kept, no allocation per request: any real server does more, so this is the
 * floor, not a peer.
 *
 *     cc -O2 c-floor.c -luv -lhttp_parser -o c-floor && ./c-floor PORT
 *
 * Prints "listening on 127.0.0.1:PORT" once (as ruv-http-hello does).
 */
#include <http_parser.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

static const char RESPONSE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
#define RESPONSE_LEN (sizeof(RESPONSE) - 1)
#define MAX_BATCH 256

typedef struct {
    uv_tcp_t tcp;
    http_parser parser;
    int pending;       /* responses owed for the current read */
    int close_after;   /* a request asked for Connection: close (or HTTP/1.0 without keep-alive) */
    char buf[65536];
} conn_t;

typedef struct {
    uv_write_t req;
    uv_buf_t bufs[MAX_BATCH];
} write_t;

static http_parser_settings settings;
static uv_loop_t *loop;

static void on_close(uv_handle_t *h) { free(h->data); }

static void on_write(uv_write_t *req, int status) {
    (void)status;
    free(req);
}

static int on_message_complete(http_parser *p) {
    conn_t *c = p->data;
    c->pending++;
    if (!http_should_keep_alive(p)) c->close_after = 1;
    return 0;
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    conn_t *c = h->data;
    *buf = uv_buf_init(c->buf, sizeof(c->buf));
}

static void flush(conn_t *c) {
    while (c->pending > 0) {
        int n = c->pending > MAX_BATCH ? MAX_BATCH : c->pending;
        write_t *w = malloc(sizeof(*w));
        for (int i = 0; i < n; i++) w->bufs[i] = uv_buf_init((char *)RESPONSE, RESPONSE_LEN);
        uv_write(&w->req, (uv_stream_t *)&c->tcp, w->bufs, n, on_write);
        c->pending -= n;
    }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    conn_t *c = s->data;
    if (nread < 0) {
        uv_close((uv_handle_t *)s, on_close);
        return;
    }
    size_t parsed = http_parser_execute(&c->parser, &settings, buf->base, (size_t)nread);
    flush(c);
    if (c->parser.http_errno != HPE_OK || parsed != (size_t)nread || c->close_after) {
        uv_close((uv_handle_t *)s, on_close);
    }
}

static void on_connection(uv_stream_t *server, int status) {
    if (status < 0) return;
    conn_t *c = calloc(1, sizeof(*c));
    uv_tcp_init(loop, &c->tcp);
    c->tcp.data = c;
    c->parser.data = c;
    http_parser_init(&c->parser, HTTP_REQUEST);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

static void on_signal(uv_signal_t *h, int signum) {
    (void)signum;
    uv_stop(h->loop);
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 0;
    signal(SIGPIPE, SIG_IGN);
    loop = uv_default_loop();
    http_parser_settings_init(&settings);
    settings.on_message_complete = on_message_complete;
    uv_tcp_t server;
    uv_tcp_init(loop, &server);
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    int rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&server, 1024, on_connection);
    if (rc != 0) {
        fprintf(stderr, "c-floor: %s\n", uv_strerror(rc));
        return 1;
    }
    struct sockaddr_in bound;
    int len = sizeof(bound);
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len);
    printf("listening on 127.0.0.1:%d\n", ntohs(bound.sin_port));
    fflush(stdout);
    uv_signal_t sigint, sigterm;
    uv_signal_init(loop, &sigint);
    uv_signal_init(loop, &sigterm);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
}

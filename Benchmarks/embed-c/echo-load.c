/*
 * echo-load: a load generator and checker for TCP echo servers, in plain C on libuv.
 *
 *   echo-load HOST PORT CONNECTIONS MESSAGES SIZE [TIMEOUT_SECONDS]
 *
 * Opens CONNECTIONS connections at once; on each, sends a SIZE-byte message, waits until
 * the whole message has come back, checks it byte for byte, and sends the next one, until
 * MESSAGES round trips are done; then closes. Prints
 *   "verified N messages of S bytes on C connections in T s: R round trips/s, M MiB/s"
 * and exits 0, or prints what went wrong and exits 1 (3 on timeout).
 *
 * Used by the embedding tests (poll-host's echo server) and by the echo benchmark
 * (Benchmarks/embed-c/run-echo-bench.sh), against poll-host and uv-echo alike.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

struct client {
    uv_tcp_t tcp;
    uv_connect_t connect;
    int id;
    long sent;      /* messages sent */
    size_t got;     /* bytes of the current echo received */
    char *message;  /* the current message */
    char *echo;     /* what came back */
};

static int connections, messages;
static size_t size;
static long done_connections, round_trips;
static int failed;
static uv_timer_t deadline;

static void fail(struct client *c, const char *what, int code) {
    fprintf(stderr, "echo-load: connection %d: %s: %s\n", c ? c->id : -1, what, code ? uv_strerror(code) : "");
    failed = 1;
    uv_stop(uv_default_loop());
}

static void fill(struct client *c) {
    for (size_t i = 0; i < size; i++) c->message[i] = (char)('a' + (c->id * 7 + c->sent * 13 + (long)i) % 26);
    if (size > 0) c->message[size - 1] = '\n';
}

static void on_closed(uv_handle_t *handle) {
    struct client *c = handle->data;
    free(c->message);
    free(c->echo);
    free(c);
    if (++done_connections == connections) uv_close((uv_handle_t *)&deadline, NULL);
}

static void send_next(struct client *c);

static void on_written(uv_write_t *req, int status) {
    struct client *c = req->data;
    free(req);
    if (status < 0) fail(c, "write", status);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    struct client *c = handle->data;
    (void)suggested;
    buf->base = c->echo + c->got;
    buf->len = size - c->got;
}

static void on_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf) {
    struct client *c = stream->data;
    (void)buf;
    if (n < 0) {
        fail(c, "read (the server ended the connection early)", (int)n);
        return;
    }
    c->got += (size_t)n;
    if (c->got < size) return;
    if (memcmp(c->echo, c->message, size) != 0) {
        fail(c, "echo differs from what was sent", 0);
        return;
    }
    round_trips++;
    if (c->sent == messages) {
        uv_read_stop(stream);
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    send_next(c);
}

static void send_next(struct client *c) {
    fill(c);
    c->sent++;
    c->got = 0;
    uv_buf_t buf = uv_buf_init(c->message, (unsigned int)size);
    /* A request per message: the echo can arrive before the write's callback has run. */
    uv_write_t *req = malloc(sizeof *req);
    req->data = c;
    int rc = uv_write(req, (uv_stream_t *)&c->tcp, &buf, 1, on_written);
    if (rc < 0) {
        free(req);
        fail(c, "uv_write", rc);
    }
}

static void on_connect(uv_connect_t *req, int status) {
    struct client *c = req->data;
    if (status < 0) {
        fail(c, "connect", status);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rc < 0) fail(c, "uv_read_start", rc);
    if (messages == 0) {
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    send_next(c);
}

static void on_deadline(uv_timer_t *timer) {
    (void)timer;
    fprintf(stderr, "echo-load: timed out after %ld round trips\n", round_trips);
    failed = 3;
    uv_stop(uv_default_loop());
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s HOST PORT CONNECTIONS MESSAGES SIZE [TIMEOUT_SECONDS]\n", argv[0]);
        return 2;
    }
    struct sockaddr_in addr;
    if (uv_ip4_addr(argv[1], atoi(argv[2]), &addr) != 0) {
        fprintf(stderr, "echo-load: bad address %s\n", argv[1]);
        return 2;
    }
    connections = atoi(argv[3]);
    messages = atoi(argv[4]);
    size = (size_t)atol(argv[5]);
    double timeout = argc > 6 ? atof(argv[6]) : 60;
    if (connections <= 0 || messages < 0 || size == 0) return 2;

    uv_loop_t *loop = uv_default_loop();
    uv_timer_init(loop, &deadline);
    uv_timer_start(&deadline, on_deadline, (uint64_t)(timeout * 1000), 0);
    uv_unref((uv_handle_t *)&deadline);
    uint64_t start = uv_hrtime();
    for (int i = 0; i < connections; i++) {
        struct client *c = calloc(1, sizeof *c);
        c->id = i;
        c->message = malloc(size);
        c->echo = malloc(size);
        uv_tcp_init(loop, &c->tcp);
        c->tcp.data = c;
        c->connect.data = c;
        int rc = uv_tcp_connect(&c->connect, &c->tcp, (const struct sockaddr *)&addr, on_connect);
        if (rc < 0) {
            fail(c, "uv_tcp_connect", rc);
            break;
        }
    }
    uv_run(loop, UV_RUN_DEFAULT);
    double seconds = (double)(uv_hrtime() - start) / 1e9;
    if (failed) return failed;
    printf("verified %ld messages of %zu bytes on %d connections in %.3f s: %.0f round trips/s, %.1f MiB/s\n",
           round_trips, size, connections, seconds, (double)round_trips / seconds,
           2.0 * (double)round_trips * (double)size / seconds / (1024 * 1024));
    return 0;
}

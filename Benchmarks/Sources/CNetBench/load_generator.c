// The load generator behind the echo rows: N connections, each a ping-pong of fixed-size
// messages (send one, wait for all of it to come back, send the next). The same code drives
// ruv-echo and the C server, so the two columns differ only in the server.
#include "CNetBench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

typedef struct cnb__load cnb__load_t;

typedef struct {
    uv_tcp_t tcp;            // first
    uv_connect_t connect;
    cnb__load_t *load;
    char *message;           // message_size bytes, rewritten before each send
    char buffer[64 * 1024];  // reused by every read
    size_t received;         // bytes of the current echo received so far
    int64_t sent;            // messages sent
    int index;
} cnb__client_t;

struct cnb__load {
    int connections;
    int message_size;
    int64_t per_connection;
    int connected;
    int finished;
    int failed;
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t checksum;
    cnb__client_t *clients;
};

static uint64_t cnb__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cnb__send(cnb__client_t *c);

static void cnb__fail(cnb__client_t *c, int status) {
    if (!c->load->failed) c->load->failed = status;
    uv_stop(c->tcp.loop);
}

static void cnb__written(uv_write_t *req, int status) {
    cnb__client_t *c = req->data;
    free(req);
    if (status < 0 && status != UV_ECANCELED) cnb__fail(c, status);
}

static void cnb__send(cnb__client_t *c) {
    // A different message each time, so a server that mixed up connections or messages
    // would change the checksum.
    memset(c->message, 'a' + (int)((c->sent + c->index) % 26), (size_t)c->load->message_size);
    c->sent++;
    uv_buf_t buf = uv_buf_init(c->message, (unsigned)c->load->message_size);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &buf, 1);
    if (n == c->load->message_size) return;
    if (n < 0 && n != UV_EAGAIN) {
        cnb__fail(c, n);
        return;
    }
    size_t offset = n > 0 ? (size_t)n : 0;
    uv_write_t *req = malloc(sizeof *req);
    req->data = c;
    // The message buffer is not touched again until the whole echo is back.
    uv_buf_t rest = uv_buf_init(c->message + offset, (unsigned)(c->load->message_size - offset));
    int rc = uv_write(req, (uv_stream_t *)&c->tcp, &rest, 1, cnb__written);
    if (rc < 0) {
        free(req);
        cnb__fail(c, rc);
    }
}

static void cnb__alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    cnb__client_t *c = (cnb__client_t *)handle;
    *buf = uv_buf_init(c->buffer, sizeof c->buffer);
}

static void cnb__read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    cnb__client_t *c = (cnb__client_t *)stream;
    cnb__load_t *load = c->load;
    if (nread < 0) {
        cnb__fail(c, (int)nread);
        return;
    }
    for (ssize_t i = 0; i < nread; i++) load->checksum += (unsigned char)buf->base[i];
    c->received += (size_t)nread;
    if (c->received < (size_t)load->message_size) return;
    c->received -= (size_t)load->message_size;  // ping-pong: never more than one message
    if (c->sent < load->per_connection) {
        cnb__send(c);
    } else {
        uv_read_stop(stream);
        if (++load->finished == load->connections) {
            load->end_ns = cnb__now();
            uv_stop(stream->loop);
        }
    }
}

static void cnb__connected(uv_connect_t *req, int status) {
    cnb__client_t *c = req->data;
    cnb__load_t *load = c->load;
    if (status < 0) {
        cnb__fail(c, status);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, cnb__alloc, cnb__read);
    if (++load->connected == load->connections) {
        load->start_ns = cnb__now();
        for (int i = 0; i < load->connections; i++) cnb__send(&load->clients[i]);
    }
}

int64_t cnb_echo_load(const char *host, int port, int connections, int message_size,
                      int64_t messages_per_connection, uint64_t *checksum) {
    if (connections < 1 || message_size < 1 || messages_per_connection < 1) return UV_EINVAL;
    struct sockaddr_storage address;
    int rc = strchr(host, ':') ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)&address)
                               : uv_ip4_addr(host, port, (struct sockaddr_in *)&address);
    if (rc < 0) return rc;
    uv_loop_t loop;
    if ((rc = uv_loop_init(&loop)) < 0) return rc;

    cnb__load_t load = {0};
    load.connections = connections;
    load.message_size = message_size;
    load.per_connection = messages_per_connection;
    load.clients = calloc((size_t)connections, sizeof(cnb__client_t));
    char *messages = malloc((size_t)connections * (size_t)message_size);
    for (int i = 0; i < connections; i++) {
        cnb__client_t *c = &load.clients[i];
        c->load = &load;
        c->index = i;
        c->message = messages + (size_t)i * (size_t)message_size;
        c->connect.data = c;
        uv_tcp_init(&loop, &c->tcp);
        rc = uv_tcp_connect(&c->connect, &c->tcp, (const struct sockaddr *)&address, cnb__connected);
        if (rc < 0) {
            load.failed = rc;
            break;
        }
    }
    if (!load.failed) uv_run(&loop, UV_RUN_DEFAULT);

    // Close everything (connects still pending are cancelled), then the loop.
    for (int i = 0; i < connections; i++) {
        uv_handle_t *h = (uv_handle_t *)&load.clients[i].tcp;
        if (h->loop == &loop && !uv_is_closing(h)) uv_close(h, NULL);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free(messages);
    free(load.clients);
    if (checksum) *checksum = load.checksum;
    if (load.failed) return load.failed;
    return (int64_t)(load.end_ns - load.start_ns);
}

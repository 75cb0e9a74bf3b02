/*
 * The C API's disposal guarantee (issue 10 §1): every loop source × every way a C program
 * ends a subscription from inside the event flow. `dispose-matrix` runs every cell on a
 * loop the program owns (ruv_runtime_create on a host uv_loop_t) and prints one line per
 * cell: "cell <source> <way> ok <values>" or "FAIL ...". Per cell it checks that the first
 * value came (the positive marker), that no callback ran after the dispose returned, and
 * that every handle the cell opened is closed again (uv_walk over the host's loop); at the
 * end the runtime closes and uv_loop_close succeeds (no handle of ours is left).
 * A plain pthread echo server (blocking sockets) serves the TCP cells, so the loop holds
 * only what the cells open. Every wait is bounded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "reactiveuv.h"
#include "check.h"


static uv_loop_t host_loop;
static ruv_runtime_t *rt;
static char directory[256];
static int echo_port;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the echo server: blocking sockets on threads of its own -------------------------- */

static void *echo_connection(void *arg) {
    int fd = (int)(intptr_t)arg;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof buffer)) > 0) {
        ssize_t done = 0;
        while (done < n) {
            ssize_t w = write(fd, buffer + done, (size_t)(n - done));
            if (w <= 0) break;
            done += w;
        }
    }
    close(fd);
    return NULL;
}

static void *echo_server(void *arg) {
    int listener = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        pthread_t t;
        pthread_create(&t, NULL, echo_connection, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
    return NULL;
}

static void start_echo_server(void) {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(listener >= 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(listener, (struct sockaddr *)&address, sizeof address) == 0);
    CHECK(listen(listener, 64) == 0);
    socklen_t length = sizeof address;
    CHECK(getsockname(listener, (struct sockaddr *)&address, &length) == 0);
    echo_port = ntohs(address.sin_port);
    pthread_t t;
    pthread_create(&t, NULL, echo_server, (void *)(intptr_t)listener);
    pthread_detach(t);
}

/* ---- the loop -------------------------------------------------------------------------- */

static void count_open(uv_handle_t *handle, void *arg) {
    if (!uv_is_closing(handle)) (*(int *)arg)++;
}

/* Handles on the host loop that are not closing. */
static int open_handles(void) {
    int count = 0;
    uv_walk(&host_loop, count_open, &count);
    return count;
}

/* One turn of the host's loop, without blocking (the test pokes between turns). */
static void turn(void) {
    uv_run(&host_loop, UV_RUN_NOWAIT);
    usleep(200);
}

/* ---- one cell's state ------------------------------------------------------------------ */

static const char *cell_source, *cell_way;
static ruv_signal_t *cell_signal;      /* the source signal (NULL for tcp_connect/listen) */
static ruv_subscription_t *cell_sub;   /* the subscription under test */
static ruv_subscription_t *cell_other; /* the other subscriber (way "other_sub") */
static ruv_subject_t *cell_trigger;    /* take_until's trigger */
static atomic_int values, late, disposed, errors, thread_done;
static int raw_clients[8], raw_count;
static char file_path[512];

static void note_value(void) {
    if (atomic_load(&disposed)) atomic_fetch_add(&late, 1);
    atomic_fetch_add(&values, 1);
}

static void on_error(int code, const char *message, void *ctx) {
    (void)ctx;
    printf("cell %s %s error %s: %s\n", cell_source, cell_way, ruv_err_name(code), message);
    atomic_fetch_add(&errors, 1);
}
static void on_completed(void *ctx) { (void)ctx; }

/* way "own": dispose the subscription from its own next callback. */
static void next_dispose_own(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    note_value();
    if (!atomic_load(&disposed)) {
        CHECK_RC(ruv_subscription_dispose(cell_sub));
        atomic_store(&disposed, 1);
    }
}

/* way "release": dispose and release the subscription, and release the signal, from
   inside the next callback. */
static void next_release_all(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    note_value();
    if (!atomic_load(&disposed)) {
        CHECK_RC(ruv_subscription_dispose(cell_sub));
        ruv_subscription_release(cell_sub);
        cell_sub = NULL;
        ruv_signal_release(cell_signal);
        cell_signal = NULL;
        atomic_store(&disposed, 1);
    }
}

/* ways "take1" and "thread": just record. */
static void next_record(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    note_value();
}

/* way "take1": the completion take sends is the disposal. */
static void completed_marks_disposed(void *ctx) {
    (void)ctx;
    atomic_store(&disposed, 1);
}

/* way "take_until": the first value fires the trigger. */
static void next_trigger(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    note_value();
    if (!atomic_load(&disposed)) {
        CHECK_RC(ruv_subject_send_next(cell_trigger, "stop", 4));
        atomic_store(&disposed, 1);
    }
}

/* way "other_sub": the second subscriber disposes the first, then itself. */
static void next_other(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    note_value();
    if (!atomic_load(&disposed) && cell_sub != NULL) {
        CHECK_RC(ruv_subscription_dispose(cell_sub));
        atomic_store(&disposed, 1);
        CHECK_RC(ruv_subscription_dispose(cell_other));
    }
}

/* way "thread": another thread disposes once a value came. */
static void *dispose_from_thread(void *arg) {
    (void)arg;
    double deadline = now_seconds() + 20;
    while (atomic_load(&values) == 0 && now_seconds() < deadline) usleep(200);
    CHECK_RC(ruv_subscription_dispose(cell_sub));
    atomic_store(&disposed, 1);
    atomic_store(&thread_done, 1);
    return NULL;
}

static pthread_t disposer;
static int disposer_started;

/* Subscribes to `signal` in the cell's way. */
static void subscribe_in_way(ruv_signal_t *signal) {
    if (strcmp(cell_way, "own") == 0) {
        CHECK_RC(ruv_signal_subscribe(signal, next_dispose_own, on_error, on_completed, NULL, &cell_sub));
    } else if (strcmp(cell_way, "release") == 0) {
        CHECK_RC(ruv_signal_subscribe(signal, next_release_all, on_error, on_completed, NULL, &cell_sub));
    } else if (strcmp(cell_way, "take1") == 0) {
        ruv_signal_t *taken = NULL;
        CHECK_RC(ruv_signal_take(signal, 1, &taken));
        CHECK_RC(ruv_signal_subscribe(taken, next_record, on_error, completed_marks_disposed, NULL, &cell_sub));
        ruv_signal_release(taken);
    } else if (strcmp(cell_way, "take_until") == 0) {
        ruv_signal_t *trigger = NULL, *until = NULL;
        CHECK_RC(ruv_subject_create(0, &cell_trigger));
        CHECK_RC(ruv_subject_signal(cell_trigger, &trigger));
        CHECK_RC(ruv_signal_take_until(signal, trigger, &until));
        CHECK_RC(ruv_signal_subscribe(until, next_trigger, on_error, on_completed, NULL, &cell_sub));
        ruv_signal_release(trigger);
        ruv_signal_release(until);
    } else if (strcmp(cell_way, "other_sub") == 0) {
        CHECK_RC(ruv_signal_subscribe(signal, next_record, on_error, on_completed, NULL, &cell_sub));
        CHECK_RC(ruv_signal_subscribe(signal, next_other, on_error, on_completed, NULL, &cell_other));
    } else if (strcmp(cell_way, "thread") == 0) {
        CHECK_RC(ruv_signal_subscribe(signal, next_record, on_error, on_completed, NULL, &cell_sub));
        CHECK(pthread_create(&disposer, NULL, dispose_from_thread, NULL) == 0);
        disposer_started = 1;
    } else {
        CHECK(!"unknown way");
    }
}

/* ---- the sources ----------------------------------------------------------------------- */

static void write_file(const char *path, const char *text, int times) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < times; i++) fputs(text, f);
    fclose(f);
}

static void append_file(const char *path, const char *text) {
    FILE *f = fopen(path, "a");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* connection_lines / connection_reads: the signal is made once connected. The callback's
   reference to the connection is kept until the cell ends (ruv_connection_cb: the callback
   owns one reference and releases it). */
static ruv_connection_t *cell_connection;
static ruv_subscription_t *cell_connect;
static void connected(ruv_connection_t *c, void *ctx) {
    (void)ctx;
    cell_connection = c;
    CHECK_RC(ruv_connection_write(c, "a\nb\nc\n", 6));
    CHECK_RC(strcmp(cell_source, "connection_lines") == 0 ? ruv_connection_lines(c, &cell_signal)
                                                          : ruv_connection_reads(c, &cell_signal));
    subscribe_in_way(cell_signal);
}

/* tcp_connect / tcp_listen: the callback is the event; "own" disposes its subscription
   from inside it, "thread" from another thread. */
static void connected_dispose(ruv_connection_t *c, void *ctx) {
    (void)ctx;
    note_value();
    ruv_connection_release(c);
    if (strcmp(cell_way, "own") == 0 && !atomic_load(&disposed)) {
        CHECK_RC(ruv_subscription_dispose(cell_sub));
        atomic_store(&disposed, 1);
    }
}
static int listen_port;
static void listening(const char *host, int port, void *ctx) {
    (void)host, (void)ctx;
    listen_port = port;
}

static void connect_raw_client(int port) {
    if (port == 0 || raw_count >= 4) return;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) == 0) {
        raw_clients[raw_count++] = fd;
    } else {
        close(fd);
    }
}

static ruv_subject_t *hot_subject;

/* The live-at-close server: keeps nothing of the connection but a count. */
static int live_connections;
static void live_connection(ruv_connection_t *c, void *ctx) {
    (void)ctx;
    live_connections++;
    ruv_connection_release(c);
}

static void start_source(void) {
    snprintf(file_path, sizeof file_path, "%s/%s-%s.txt", directory, cell_source, cell_way);
    if (strcmp(cell_source, "timer") == 0) {
        CHECK_RC(ruv_signal_timer(rt, 0.001, &cell_signal));
    } else if (strcmp(cell_source, "interval") == 0) {
        CHECK_RC(ruv_signal_interval(rt, 0.001, &cell_signal));
    } else if (strcmp(cell_source, "file_read") == 0) {
        write_file(file_path, "0123456789\n", 20000); /* several 64 KiB chunks */
        CHECK_RC(ruv_file_read(rt, file_path, &cell_signal));
    } else if (strcmp(cell_source, "file_lines") == 0) {
        write_file(file_path, "line\n", 100);
        CHECK_RC(ruv_file_lines(rt, file_path, &cell_signal));
    } else if (strcmp(cell_source, "file_tail") == 0) {
        write_file(file_path, "a\nb\nc\n", 1);
        CHECK_RC(ruv_file_tail(rt, file_path, 10, &cell_signal));
    } else if (strcmp(cell_source, "unix_signal") == 0) {
        CHECK_RC(ruv_unix_signal_watch(rt, SIGUSR2, &cell_signal));
    } else if (strcmp(cell_source, "subject") == 0) {
        CHECK_RC(ruv_subject_create(0, &hot_subject));
        CHECK_RC(ruv_subject_signal(hot_subject, &cell_signal));
    } else if (strcmp(cell_source, "connection_lines") == 0 || strcmp(cell_source, "connection_reads") == 0) {
        CHECK_RC(ruv_tcp_connect(rt, "127.0.0.1", echo_port, connected, on_error, NULL, NULL, &cell_connect));
        return;
    } else if (strcmp(cell_source, "tcp_connect") == 0) {
        CHECK_RC(ruv_tcp_connect(rt, "127.0.0.1", echo_port, connected_dispose, on_error, NULL, NULL, &cell_sub));
        if (strcmp(cell_way, "thread") == 0) {
            CHECK(pthread_create(&disposer, NULL, dispose_from_thread, NULL) == 0);
            disposer_started = 1;
        }
        return;
    } else if (strcmp(cell_source, "tcp_listen") == 0) {
        listen_port = 0;
        CHECK_RC(ruv_tcp_listen(rt, "127.0.0.1", 0, listening, connected_dispose, on_error, NULL, &cell_sub));
        if (strcmp(cell_way, "thread") == 0) {
            CHECK(pthread_create(&disposer, NULL, dispose_from_thread, NULL) == 0);
            disposer_started = 1;
        }
        return;
    } else {
        CHECK(!"unknown source");
    }
    subscribe_in_way(cell_signal);
}

/* Makes more events happen between turns of the loop. */
static void poke(void) {
    if (strcmp(cell_source, "file_tail") == 0) append_file(file_path, "more\n");
    if (strcmp(cell_source, "unix_signal") == 0) raise(SIGUSR2);
    if (strcmp(cell_source, "subject") == 0) CHECK_RC(ruv_subject_send_next(hot_subject, "hot", 3));
    if (strcmp(cell_source, "tcp_listen") == 0) connect_raw_client(listen_port);
}

static int run_cell(const char *source, const char *way) {
    cell_source = source;
    cell_way = way;
    cell_signal = NULL;
    cell_sub = cell_other = cell_connect = NULL;
    cell_trigger = NULL;
    cell_connection = NULL;
    hot_subject = NULL;
    raw_count = 0;
    disposer_started = 0;
    atomic_store(&values, 0);
    atomic_store(&late, 0);
    atomic_store(&disposed, 0);
    atomic_store(&errors, 0);
    atomic_store(&thread_done, 0);
    int baseline = open_handles();
    int failed = 0;

    start_source();
    double deadline = now_seconds() + 20;
    while (!(atomic_load(&values) > 0 && atomic_load(&disposed)) && now_seconds() < deadline) {
        poke();
        turn();
    }
    if (disposer_started) pthread_join(disposer, NULL);
    if (!(atomic_load(&values) > 0 && atomic_load(&disposed))) {
        printf("FAIL cell %s %s: values %d disposed %d within 20 s\n", source, way, atomic_load(&values),
               atomic_load(&disposed));
        failed = 1;
    }
    /* Let whatever was in flight arrive (it must not be delivered), then end the rest. */
    for (int i = 0; i < 50; i++) turn();
    if (atomic_load(&late) != 0) {
        printf("FAIL cell %s %s: %d callbacks after the dispose returned\n", source, way, atomic_load(&late));
        failed = 1;
    }
    if (atomic_load(&errors) != 0) failed = 1;

    if (cell_connect) {
        CHECK_RC(ruv_subscription_dispose(cell_connect));
        ruv_subscription_release(cell_connect);
    }
    if (cell_sub) {
        CHECK_RC(ruv_subscription_dispose(cell_sub));
        ruv_subscription_release(cell_sub);
    }
    if (cell_other) {
        CHECK_RC(ruv_subscription_dispose(cell_other));
        ruv_subscription_release(cell_other);
    }
    ruv_signal_release(cell_signal);
    ruv_subject_release(cell_trigger);
    ruv_subject_release(hot_subject);
    ruv_connection_release(cell_connection);
    for (int i = 0; i < raw_count; i++) close(raw_clients[i]);

    /* Every handle the cell opened closes. */
    deadline = now_seconds() + 20;
    while (open_handles() > baseline && now_seconds() < deadline) turn();
    if (open_handles() != baseline) {
        printf("FAIL cell %s %s: %d handles left open\n", source, way, open_handles() - baseline);
        failed = 1;
    }
    if (!failed) printf("cell %s %s ok\n", source, way);
    fflush(stdout);
    return failed;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK(argc == 2);
    snprintf(directory, sizeof directory, "%s", argv[1]);
    start_echo_server();
    CHECK(uv_loop_init(&host_loop) == 0);
    CHECK_RC(ruv_runtime_create(&host_loop, &rt));

    /* A watch of SIGUSR2 for the whole run: libuv resets a signal to its default action
       when its last watch stops, and a raise() after a cell's dispose must not kill us. */
    ruv_signal_t *guard_signal = NULL;
    ruv_subscription_t *guard = NULL;
    CHECK_RC(ruv_unix_signal_watch(rt, SIGUSR2, &guard_signal));
    CHECK_RC(ruv_signal_subscribe(guard_signal, NULL, NULL, NULL, NULL, &guard));
    ruv_signal_release(guard_signal);

    static const char *signal_sources[] = {"timer", "interval", "file_read", "file_lines", "file_tail",
                                           "unix_signal", "subject", "connection_lines", "connection_reads"};
    static const char *signal_ways[] = {"own", "release", "take1", "take_until", "other_sub", "thread"};
    static const char *callback_sources[] = {"tcp_connect", "tcp_listen"};
    static const char *callback_ways[] = {"own", "thread"};
    int failures = 0;
    for (size_t s = 0; s < sizeof signal_sources / sizeof *signal_sources; s++) {
        for (size_t w = 0; w < sizeof signal_ways / sizeof *signal_ways; w++) {
            /* A connection has one reader at a time: a second subscriber is refused. */
            if (strncmp(signal_sources[s], "connection", 10) == 0 && strcmp(signal_ways[w], "other_sub") == 0) continue;
            failures += run_cell(signal_sources[s], signal_ways[w]);
        }
    }
    for (size_t s = 0; s < sizeof callback_sources / sizeof *callback_sources; s++) {
        for (size_t w = 0; w < sizeof callback_ways / sizeof *callback_ways; w++) {
            failures += run_cell(callback_sources[s], callback_ways[w]);
        }
    }

    CHECK_RC(ruv_subscription_dispose(guard));
    ruv_subscription_release(guard);

    /* Subscriptions nobody disposes (`out` NULL: reactiveuv.h says they end when the runtime
       closes): a tail, a unix-signal watch, an interval and a TCP server with a client
       connected to it, live when the runtime closes. Under
       `make sanitize` LeakSanitizer checks that closing freed their pipelines. */
    char live_path[512];
    snprintf(live_path, sizeof live_path, "%s/live-at-close.txt", directory);
    write_file(live_path, "x\n", 1);
    ruv_signal_t *live_tail = NULL, *live_signal = NULL;
    CHECK_RC(ruv_file_tail(rt, live_path, 1, &live_tail));
    CHECK_RC(ruv_signal_subscribe(live_tail, NULL, NULL, NULL, NULL, NULL));
    ruv_signal_release(live_tail);
    CHECK_RC(ruv_unix_signal_watch(rt, SIGUSR2, &live_signal));
    CHECK_RC(ruv_signal_subscribe(live_signal, NULL, NULL, NULL, NULL, NULL));
    ruv_signal_release(live_signal);
    ruv_signal_t *live_interval = NULL;
    CHECK_RC(ruv_signal_interval(rt, 0.001, &live_interval));
    CHECK_RC(ruv_signal_subscribe(live_interval, NULL, NULL, NULL, NULL, NULL));
    ruv_signal_release(live_interval);
    listen_port = 0;
    CHECK_RC(ruv_tcp_listen(rt, "127.0.0.1", 0, listening, live_connection, NULL, NULL, NULL));
    double live_deadline = now_seconds() + 20;
    while (listen_port == 0 && now_seconds() < live_deadline) turn();
    CHECK(listen_port != 0);
    raw_count = 0;
    connect_raw_client(listen_port);
    while (live_connections == 0 && now_seconds() < live_deadline) turn();
    CHECK(live_connections == 1);
    for (int i = 0; i < 5; i++) turn();

    CHECK_RC(ruv_runtime_close(rt));
    ruv_runtime_release(rt);
    for (int i = 0; i < raw_count; i++) close(raw_clients[i]);
    /* The close callbacks run on the host's loop; then nothing of ours is left. */
    for (int i = 0; i < 1000 && uv_run(&host_loop, UV_RUN_NOWAIT) != 0; i++) {}
    int closed = uv_loop_close(&host_loop);
    if (closed != 0) {
        printf("FAIL uv_loop_close: %s\n", uv_err_name(closed));
        failures++;
    }
    printf("failures %d\n", failures);
    if (failures == 0) printf("ok\n");
    return failures == 0 ? 0 : 1;
}

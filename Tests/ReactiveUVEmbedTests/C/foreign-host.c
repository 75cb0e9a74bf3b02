/*
 * ReactiveUV's own loop inside event loops nobody here wrote (issue 32): GLib's GMainLoop
 * (built with -DHOST_GLIB) or libevent's event_base (-DHOST_LIBEVENT). The host watches
 * ruv_runtime_backend_fd() for reading and, after each ruv_runtime_run_once(), arms one
 * timer of its own from ruv_runtime_backend_timeout() — nothing else: no prepare step, no
 * hook before it sleeps. Everything is set up from a host callback, outside run_once, so
 * only the backend descriptor can tell the host that there is work.
 *
 * `foreign-host <dir>`:
 *   - tails <dir>/rot.log with ruv_file_tail while a writer thread appends numbered lines
 *     and rotates the file three times: every line exactly once, in order;
 *   - serves TCP on 127.0.0.1:0, answering "echo: <line>" to each line of a client thread
 *     (plain sockets): every reply exact;
 *   - ticks a 20 ms interval: at least 10 ticks, then disposed from a host callback;
 *   - then idles for a second with the tail and the server still subscribed and counts
 *     the host's wake-ups, on the descriptor and its timer (a busy loop would make
 *     thousands; the tail's 200 ms safety tick makes about five);
 *   - disposes everything from a host callback, closes the runtime, prints "ok".
 * Prints "FAIL ..." and exits 1 on any mismatch; every wait is bounded (a watchdog alarm).
 * EmbedForeignHostTests.swift builds it with `pkg-config glib-2.0 libevent` and runs it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

#if defined(HOST_GLIB)
#include <glib-unix.h>
#include <glib.h>
#define HOST_NAME "glib"
#elif defined(HOST_LIBEVENT)
#include <event2/event.h>
#define HOST_NAME "libevent"
#else
#error "build with -DHOST_GLIB or -DHOST_LIBEVENT"
#endif

#include "reactiveuv.h"
#include "check.h"


enum { TOTAL_LINES = 4000, CLIENT_LINES = 200, ROTATE_EVERY = 1000 };

static ruv_runtime_t *rt;
static char path[4096];

/* Progress, counted on the loop thread (the writer and client threads only read). */
static atomic_int tail_next = 0; /* the next line number expected */
static atomic_int port = 0;
static int ticks = 0;
static int phase = 0; /* 0 setup, 1 running, 2 idle check, 3 done */
static long wakeups = 0;

static ruv_subscription_t *tail_sub, *server_sub, *tick_sub;

/* ---- the host ------------------------------------------------------------------------ */

static void host_arm_timer(void);
static void host_quit(void);
static void host_after(int ms, void (*fn)(void));
static void host_init(void);

static void drive(void) {
    CHECK(ruv_runtime_run_once(rt) >= 0);
    host_arm_timer();
}

#if defined(HOST_GLIB)
static GMainLoop *main_loop;
static guint timer_source;

static gboolean on_fd(gint fd, GIOCondition condition, gpointer data) {
    (void)fd, (void)condition, (void)data;
    wakeups++;
    drive();
    return G_SOURCE_CONTINUE;
}

static gboolean on_timer(gpointer data) {
    (void)data;
    wakeups++;
    timer_source = 0;
    drive();
    return G_SOURCE_REMOVE;
}

static void host_arm_timer(void) {
    if (timer_source) g_source_remove(timer_source);
    timer_source = 0;
    int ms = ruv_runtime_backend_timeout(rt);
    CHECK(ms >= -1);
    if (ms >= 0) timer_source = g_timeout_add((guint)ms, on_timer, NULL);
}

static gboolean run_later(gpointer fn) {
    ((void (*)(void))fn)();
    return G_SOURCE_REMOVE;
}

static void host_after(int ms, void (*fn)(void)) { g_timeout_add((guint)ms, run_later, (gpointer)fn); }

static void host_quit(void) { g_main_loop_quit(main_loop); }

static void host_init(void) {
    main_loop = g_main_loop_new(NULL, FALSE);
    g_unix_fd_add(ruv_runtime_backend_fd(rt), G_IO_IN, on_fd, NULL);
}

static void host_run(void) {
    g_main_loop_run(main_loop);
    if (timer_source) g_source_remove(timer_source);
    g_main_loop_unref(main_loop);
}
#else
static struct event_base *base;
static struct event *fd_event, *timer_event;

static void on_fd(evutil_socket_t fd, short what, void *data) {
    (void)fd, (void)what, (void)data;
    wakeups++;
    drive();
}

static void on_timer(evutil_socket_t fd, short what, void *data) {
    (void)fd, (void)what, (void)data;
    wakeups++;
    drive();
}

static void host_arm_timer(void) {
    evtimer_del(timer_event);
    int ms = ruv_runtime_backend_timeout(rt);
    CHECK(ms >= -1);
    if (ms >= 0) {
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
        evtimer_add(timer_event, &tv);
    }
}

static void run_later(evutil_socket_t fd, short what, void *fn) {
    (void)fd, (void)what;
    ((void (*)(void))fn)();
}

static void host_after(int ms, void (*fn)(void)) {
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    CHECK(event_base_once(base, -1, EV_TIMEOUT, run_later, (void *)fn, &tv) == 0);
}

static void host_quit(void) { event_base_loopbreak(base); }

static void host_init(void) {
    base = event_base_new();
    CHECK(base != NULL);
    fd_event = event_new(base, ruv_runtime_backend_fd(rt), EV_READ | EV_PERSIST, on_fd, NULL);
    timer_event = evtimer_new(base, on_timer, NULL);
    CHECK(event_add(fd_event, NULL) == 0);
}

static void host_run(void) {
    event_base_dispatch(base);
    event_free(fd_event);
    event_free(timer_event);
    event_base_free(base);
}
#endif

/* ---- the tail, fed by a writer thread ------------------------------------------------ */

static void on_tail_line(const void *bytes, size_t len, void *ctx) {
    (void)ctx;
    char text[32];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
    memcpy(text, bytes, n);
    text[n] = '\0';
    int expected = atomic_load(&tail_next);
    if (atoi(text) != expected) {
        printf("FAIL tail: line '%s' where %d belongs\n", text, expected);
        fflush(stdout);
        exit(1);
    }
    atomic_store(&tail_next, expected + 1);
}

static void on_error(int code, const char *message, void *ctx) {
    printf("FAIL %s: %s %s\n", (const char *)ctx, ruv_err_name(code), message);
    fflush(stdout);
    exit(1);
}

static void *writer(void *arg) {
    (void)arg;
    char rotated[4200], line[64];
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    CHECK(fd >= 0);
    for (int i = 0; i < TOTAL_LINES; i++) {
        if (i > 0 && i % ROTATE_EVERY == 0) {
            /* Rotate once the tail has the current file's first line (a file renamed away
               before anybody opened it is lost to every tailer). */
            for (int waited = 0; atomic_load(&tail_next) <= i - ROTATE_EVERY; waited++) {
                CHECK(waited < 60000);
                usleep(1000);
            }
            snprintf(rotated, sizeof rotated, "%s.%d", path, i / ROTATE_EVERY);
            CHECK(rename(path, rotated) == 0);
            close(fd);
            fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            CHECK(fd >= 0);
        }
        int n = snprintf(line, sizeof line, "%d\n", i);
        CHECK(write(fd, line, (size_t)n) == n);
        if (i % 100 == 0) usleep(1000);
    }
    close(fd);
    return NULL;
}

/* ---- the TCP server, and a client thread with plain sockets -------------------------- */

static void on_listening(const char *host, int p, void *ctx) {
    (void)host, (void)ctx;
    atomic_store(&port, p);
}

static int echo_line(const void *bytes, size_t len, ruv_buffer_t *out, void *ctx) {
    (void)ctx;
    CHECK_RC(ruv_buffer_append(out, "echo: ", 6));
    CHECK_RC(ruv_buffer_append(out, bytes, len));
    CHECK_RC(ruv_buffer_append(out, "\n", 1));
    return 0;
}

static void on_connection(ruv_connection_t *c, void *ctx) {
    (void)ctx;
    ruv_signal_t *lines = NULL, *replies = NULL;
    CHECK_RC(ruv_connection_lines(c, &lines));
    CHECK_RC(ruv_signal_map(lines, echo_line, NULL, &replies));
    CHECK_RC(ruv_connection_send(c, replies, 1, on_error, NULL, "send", NULL));
    ruv_signal_release(lines);
    ruv_signal_release(replies);
    ruv_connection_release(c);
}

static atomic_int client_ok = 0;

static void *client(void *arg) {
    (void)arg;
    for (int waited = 0; atomic_load(&port) == 0; waited++) {
        CHECK(waited < 60000);
        usleep(1000);
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(s >= 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atomic_load(&port))};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(s, (struct sockaddr *)&address, sizeof address) == 0);
    /* Lines one at a time, each answered before the next (the host must wake for each). */
    char line[64], expected[64], got[64];
    for (int i = 0; i < CLIENT_LINES; i++) {
        int n = snprintf(line, sizeof line, "line %d\n", i);
        CHECK(write(s, line, (size_t)n) == n);
        int want = snprintf(expected, sizeof expected, "echo: line %d\n", i);
        int have = 0;
        while (have < want) {
            ssize_t r = read(s, got + have, (size_t)(want - have));
            CHECK(r > 0);
            have += (int)r;
        }
        if (memcmp(got, expected, (size_t)want) != 0) {
            printf("FAIL client: got '%.*s' for '%s'\n", want, got, line);
            fflush(stdout);
            exit(1);
        }
    }
    shutdown(s, SHUT_WR);
    char rest[16];
    CHECK(read(s, rest, sizeof rest) == 0); /* the server's half-close after the last reply */
    close(s);
    atomic_store(&client_ok, 1);
    return NULL;
}

/* ---- the timer ----------------------------------------------------------------------- */

static void on_tick(const void *bytes, size_t len, void *ctx) {
    (void)bytes, (void)len, (void)ctx;
    ticks++;
}

/* ---- the script, run from host callbacks (outside ruv_runtime_run_once) --------------- */

static pthread_t writer_thread, client_thread;
static long wakeups_at_idle_start;

static void finish(void) {
    CHECK_RC(ruv_subscription_dispose(tail_sub));
    CHECK_RC(ruv_subscription_dispose(server_sub));
    ruv_subscription_release(tail_sub);
    ruv_subscription_release(server_sub);
    ruv_subscription_release(tick_sub);
    phase = 3;
    host_quit();
}

static void idle_over(void) {
    long idle = wakeups - wakeups_at_idle_start;
    printf("idle wake-ups %s\n", idle <= 30 ? "few" : "many");
    if (idle > 30) printf("(%ld wake-ups in an idle second)\n", idle);
    finish();
}

static void check_progress(void) {
    if (atomic_load(&tail_next) >= TOTAL_LINES && atomic_load(&client_ok) && ticks >= 10) {
        printf("tail %d lines in order\n", atomic_load(&tail_next));
        printf("client %d replies exact\n", CLIENT_LINES);
        printf("ticks at least 10\n");
        /* Disposed from the host's own callback; the idle second starts once the runtime
           had a turn to close the timer. */
        CHECK_RC(ruv_subscription_dispose(tick_sub));
        phase = 2;
        wakeups_at_idle_start = wakeups;
        host_after(1000, idle_over);
        return;
    }
    host_after(10, check_progress);
}

static void setup(void) {
    ruv_signal_t *tail = NULL, *ticker = NULL;
    CHECK_RC(ruv_file_tail(rt, path, 0, &tail));
    CHECK_RC(ruv_signal_subscribe(tail, on_tail_line, on_error, NULL, "tail", &tail_sub));
    ruv_signal_release(tail);
    CHECK_RC(ruv_tcp_listen(rt, "127.0.0.1", 0, on_listening, on_connection, on_error, "listen", &server_sub));
    CHECK_RC(ruv_signal_interval(rt, 0.02, &ticker));
    CHECK_RC(ruv_signal_subscribe(ticker, on_tick, on_error, NULL, "interval", &tick_sub));
    ruv_signal_release(ticker);
    phase = 1;
    CHECK(pthread_create(&writer_thread, NULL, writer, NULL) == 0);
    CHECK(pthread_create(&client_thread, NULL, client, NULL) == 0);
    host_after(10, check_progress);
}

static void watchdog(int sig) {
    (void)sig;
    static const char text[] = "FAIL timed out\n";
    write(1, text, sizeof text - 1);
    _exit(1);
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, watchdog);
    alarm(120);
    snprintf(path, sizeof path, "%s/rot.log", argv[1]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    close(fd);
    CHECK_RC(ruv_runtime_create(NULL, &rt));
    printf("host %s\n", HOST_NAME);
    host_init();
    host_after(5, setup);
    host_run();
    CHECK(phase == 3);
    pthread_join(writer_thread, NULL);
    pthread_join(client_thread, NULL);
    CHECK_RC(ruv_runtime_close(rt));
    ruv_runtime_release(rt);
    printf("ok\n");
    return 0;
}

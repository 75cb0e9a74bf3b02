// netdelay: holds every packet an iptables NFQUEUE rule hands it for a fixed time, and
// drops a given share of them, for the namespaced NATS fault tests (NetnsCluster.swift).
// It stands in for `tc qdisc … netem` on kernels built without netem (the test machine's),
// using only what such kernels do have: the NFQUEUE target and nfnetlink_queue.
//
//   netdelay QUEUE DELAY_US [LOSS_PERCENT [SEED]]
//
// Rules that feed it, in the host's namespace, e.g. 0.5 ms each way on a host's link:
//   iptables -A OUTPUT ! -o lo -j NFQUEUE --queue-num 0 --queue-bypass
//   iptables -A INPUT  ! -i lo -j NFQUEUE --queue-num 0 --queue-bypass
// (--queue-bypass: while no program is bound to the queue, packets pass undelayed.)
//
// Every packet gets the same delay, so packets leave in the order they came, and one
// batch verdict (accept every id up to n) lets out all that are due. A dropped packet is
// given its own DROP verdict when it arrives. Only metadata is copied to user space
// (NFQNL_COPY_META), and GSO packets are taken whole (NFQA_CFG_F_GSO), as netem takes an
// skb: a loss drops the whole aggregate. If the queue in the kernel fills, packets pass
// (NFQA_CFG_F_FAIL_OPEN) rather than being dropped unasked.
//
// On SIGTERM or SIGINT it lets out everything it holds, prints one line of counts to
// stderr ("netdelay: queue Q: P packets, delay D us, L% loss: dropped N") and exits 0.
// Raw netlink with the kernel's own headers (linux-libc-dev): no libnetfilter_queue.

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// Packets held at once; a full ring lets the oldest out early rather than grow.
#define RING (1u << 20)

static volatile sig_atomic_t stopping;
static void on_signal(int sig) { (void)sig; stopping = 1; }

static int fd;
static uint16_t queue;
static uint32_t seq;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

// xorshift64*: the loss draw, seeded so a run can be repeated.
static uint64_t rng;
static double uniform(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

// A netlink message under construction: header, nfgenmsg, attributes.
struct message {
    char buffer[256];
    size_t length;
};

static void begin(struct message *m, uint8_t type, uint16_t flags) {
    memset(m, 0, sizeof *m);
    struct nlmsghdr *h = (struct nlmsghdr *)m->buffer;
    h->nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | type;
    h->nlmsg_flags = NLM_F_REQUEST | flags;
    h->nlmsg_seq = ++seq;
    struct nfgenmsg *g = (struct nfgenmsg *)NLMSG_DATA(h);
    g->nfgen_family = AF_UNSPEC;
    g->version = NFNETLINK_V0;
    g->res_id = htons(queue);
    m->length = NLMSG_LENGTH(sizeof *g);
}

static void attribute(struct message *m, uint16_t type, const void *data, size_t size) {
    struct nlattr *a = (struct nlattr *)(m->buffer + NLMSG_ALIGN(m->length));
    a->nla_type = type;
    a->nla_len = (uint16_t)(NLA_HDRLEN + size);
    memcpy((char *)a + NLA_HDRLEN, data, size);
    m->length = NLMSG_ALIGN(m->length) + NLA_ALIGN(a->nla_len);
}

static int transmit(struct message *m) {
    struct nlmsghdr *h = (struct nlmsghdr *)m->buffer;
    h->nlmsg_len = (uint32_t)m->length;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    for (;;) {
        ssize_t n = sendto(fd, m->buffer, m->length, 0, (struct sockaddr *)&kernel, sizeof kernel);
        if (n >= 0) return 0;
        if (errno != EINTR) return -1;
    }
}

// Sends a configuration message and waits for the kernel's acknowledgement (or error).
static int configure(struct message *m, const char *what) {
    if (transmit(m) != 0) { fprintf(stderr, "netdelay: %s: send: %s\n", what, strerror(errno)); return -1; }
    char reply[8192];
    for (;;) {
        ssize_t n = recv(fd, reply, sizeof reply, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "netdelay: %s: %s\n", what, strerror(errno));
            return -1;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)reply; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq != seq) continue;
            int error = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
            if (error == 0) return 0;
            fprintf(stderr, "netdelay: %s: %s\n", what, strerror(-error));
            return -1;
        }
    }
}

static void verdict(uint8_t type, uint32_t id, uint32_t decision) {
    struct message m;
    begin(&m, type, 0);
    struct nfqnl_msg_verdict_hdr v = {.verdict = htonl(decision), .id = htonl(id)};
    attribute(&m, NFQA_VERDICT_HDR, &v, sizeof v);
    if (transmit(&m) != 0) fprintf(stderr, "netdelay: verdict: %s\n", strerror(errno));
}

// Lets every packet with an id up to `id` go on.
static void release_through(uint32_t id) { verdict(NFQNL_MSG_VERDICT_BATCH, id, NF_ACCEPT); }

static uint32_t ids[RING];
static uint64_t due[RING];
static uint32_t head, tail; // held: ids[head..tail) (mod RING)

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: netdelay QUEUE DELAY_US [LOSS_PERCENT [SEED]]\n");
        return 2;
    }
    queue = (uint16_t)atoi(argv[1]);
    uint64_t delay = (uint64_t)strtoull(argv[2], NULL, 10) * 1000u;
    double loss = argc > 3 ? atof(argv[3]) / 100.0 : 0;
    rng = argc > 4 ? strtoull(argv[4], NULL, 10) : 0x9E3779B97F4A7C15ull;
    if (rng == 0) rng = 1;
    // A sub-millisecond delay needs wake-ups near the asked time (50 us slack by default).
    prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);

    struct sigaction action = {.sa_handler = on_signal};
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigset_t blocked, during_wait;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, &during_wait);
    sigdelset(&during_wait, SIGTERM);
    sigdelset(&during_wait, SIGINT);

    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
    if (fd < 0) { perror("netdelay: socket"); return 1; }
    struct sockaddr_nl local = {.nl_family = AF_NETLINK};
    if (bind(fd, (struct sockaddr *)&local, sizeof local) != 0) { perror("netdelay: bind"); return 1; }
    // A deep receive buffer, and no ENOBUFS if it overflows anyway: a packet whose
    // message was lost is let out by the next batch verdict (it covers every lower id).
    int size = 16 << 20, one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);

    struct message m;
    begin(&m, NFQNL_MSG_CONFIG, NLM_F_ACK);
    struct nfqnl_msg_config_cmd bind_command = {.command = NFQNL_CFG_CMD_BIND};
    attribute(&m, NFQA_CFG_CMD, &bind_command, sizeof bind_command);
    if (configure(&m, "bind the queue") != 0) return 1;

    begin(&m, NFQNL_MSG_CONFIG, NLM_F_ACK);
    struct nfqnl_msg_config_params params = {.copy_range = htonl(0), .copy_mode = NFQNL_COPY_META};
    attribute(&m, NFQA_CFG_PARAMS, &params, sizeof params);
    uint32_t maxlen = htonl(RING / 2);
    attribute(&m, NFQA_CFG_QUEUE_MAXLEN, &maxlen, sizeof maxlen);
    uint32_t flags = htonl(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO);
    attribute(&m, NFQA_CFG_MASK, &flags, sizeof flags);
    attribute(&m, NFQA_CFG_FLAGS, &flags, sizeof flags);
    if (configure(&m, "configure the queue") != 0) return 1;
    // The test waits for this line before it sends anything through the queue.
    fprintf(stderr, "netdelay: queue %u bound, delay %llu us, loss %.1f%%\n", queue,
            (unsigned long long)(delay / 1000), loss * 100);

    static char buffer[1 << 16];
    uint64_t packets = 0, dropped = 0;
    uint32_t last_seen = 0;
    int seen_any = 0;
    while (!stopping) {
        uint64_t now = now_ns();
        if (head != tail && due[head % RING] <= now) {
            uint32_t last = 0;
            while (head != tail && due[head % RING] <= now) last = ids[head++ % RING];
            release_through(last);
        }
        struct timespec wait = {.tv_sec = 1};
        if (head != tail) {
            uint64_t left = due[head % RING] - now;
            wait.tv_sec = (time_t)(left / 1000000000u);
            wait.tv_nsec = (long)(left % 1000000000u);
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = ppoll(&p, 1, &wait, &during_wait);
        if (ready < 0 && errno != EINTR) { perror("netdelay: ppoll"); break; }
        if (ready <= 0) continue;
        for (;;) {
            ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOBUFS)
                    fprintf(stderr, "netdelay: recv: %s\n", strerror(errno));
                break;
            }
            uint64_t arrived = now_ns();
            for (struct nlmsghdr *h = (struct nlmsghdr *)buffer; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
                if (h->nlmsg_type != ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET)) continue;
                size_t offset = NLMSG_LENGTH(sizeof(struct nfgenmsg));
                while (offset + NLA_HDRLEN <= h->nlmsg_len) {
                    struct nlattr *a = (struct nlattr *)((char *)h + offset);
                    if (a->nla_len < NLA_HDRLEN || offset + a->nla_len > h->nlmsg_len) break;
                    if ((a->nla_type & NLA_TYPE_MASK) == NFQA_PACKET_HDR) {
                        struct nfqnl_msg_packet_hdr header;
                        memcpy(&header, (char *)a + NLA_HDRLEN, sizeof header);
                        uint32_t id = ntohl(header.packet_id);
                        packets++;
                        last_seen = id;
                        seen_any = 1;
                        if (loss > 0 && uniform() < loss) {
                            dropped++;
                            verdict(NFQNL_MSG_VERDICT, id, NF_DROP);
                        } else {
                            if (tail - head == RING) release_through(ids[head++ % RING]);
                            ids[tail % RING] = id;
                            due[tail % RING] = arrived + delay;
                            tail++;
                        }
                        break;
                    }
                    offset += NLA_ALIGN(a->nla_len);
                }
            }
        }
    }
    // Everything still held goes on now; the rule's --queue-bypass passes the rest.
    if (seen_any) release_through(last_seen);
    fprintf(stderr, "netdelay: queue %u: %llu packets, delay %llu us, %.1f%% loss: dropped %llu\n", queue,
            (unsigned long long)packets, (unsigned long long)(delay / 1000), loss * 100,
            (unsigned long long)dropped);
    close(fd);
    return 0;
}

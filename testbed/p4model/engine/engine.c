/* The native fabric engine: switches, their traffic managers and the cables
 * between them, driven by one event heap with no Python on the packet path.
 *
 * Model.  Time is integer nanoseconds (model time).  Each switch runs a
 * program of the native back end through its C ABI (tb_ingress, tb_egress,
 * tb_priority; see testbed/p4model/backend/native/program.py).  Its traffic
 * manager is testbed/p4model/tm/model.py's, rule for rule: one FIFO per
 * (port, priority) with a packet and a byte limit and a pps rate fixed at
 * enqueue; a non-preemptive port serving the highest eligible priority; a
 * link of rate R and delay D (transmit_at = dequeue + ceil(L*8/R) + D, never
 * decreasing per port); a packet whose link is idle departs at its arrival
 * (the switch's depart_now fast path, with queue metadata 0); link loss
 * drawn per packet offered to a lossy port; PFC (XOFF/XON per source port,
 * one buffer pool for the lossless priority, pause frames obeyed per
 * priority).  Events at one instant: arrivals before departures.
 *
 * Ports are of three kinds: a cable to a port of another switch of this
 * engine (the frame arrives there at its transmit time), a host port (the
 * frame is counted and, when asked, kept for the caller with its time), or
 * none (counted as no_interface, as the Python switch does).
 *
 * A cut link (eng_port_down, a pulled cable or an interface taken down):
 * every frame the port transmits while it is down is lost, and so is every
 * frame on its way into the port at the moment it goes down (the frames on
 * the cable; they never arrive, even if it comes back before their time).
 * The queue keeps draining at the link's rate into the dead cable, as a
 * switch that still sends on an interface without carrier.  A cable has two
 * ports: cutting it takes both down.  Each port counts what it lost so
 * (cut_lost).  A switch whose process ends (eng_switch_clear) loses what it
 * holds: its queued packets, its PFC state and every counter.
 *
 * Multicast (v1model.py's rule): when a program names mcast_grp
 * (eng_set_copies gives its tb_mcast_grp and setters) and a packet leaves
 * ingress with mcast_grp != 0, each (rid, port) of that group (eng_set_groups,
 * the PRE's groups in replication order) gets its own copy of the packet's
 * state with egress_rid = rid and instance_type 5; an unknown group makes no
 * copy.
 *
 * Clones, resubmit and recirculation (v1model.py's order and rules, as
 * backend/native/binding.py NativePipeline makes them): a program that can
 * ask for them (eng_set_replication gives its copy calls and the loop
 * bound) runs each pass's after-ingress decisions here: I2E clone (one copy
 * per replica of the clone session, eng_set_sessions, re-parsed with the
 * field list kept, instance_type 1, cut to the session's
 * packet_length_bytes at transmit), resubmit (ends the pass; ingress again
 * with the original bytes, instance_type 6), multicast, drop, unicast.  Its
 * egress runs the egress control alone, then: E2E clone (instance_type 2,
 * the headers as egress left them), drop, compute_checksum and deparse,
 * then recirculate (ingress again with the deparsed bytes, instance_type 4)
 * or transmit.  Copies made by ingress take the idle-link fast path as any
 * packet; copies made in egress (E2E clones, the jobs of a recirculated
 * pass) are queued, as the Python switch loop queues an egress's jobs (no
 * source port, unclassified).  Resubmit and recirculation passes are
 * bounded (v1model.MAX_PASSES): the pass that reaches the bound is dropped
 * and counted in loop_drops.  A recirculated packet longer than MAX_FRAME
 * is dropped as a pipeline error.
 *
 * Truncation: the one-call path's tb_egress cuts the packet itself; the
 * copy path cuts it to the smaller non-zero of the clone session's limit
 * and tb_truncate (the program's).  Digests: after each ingress pass of a
 * program that sends them (eng_set_digests), the pass's digest (tb_digest:
 * its layout id + 1 and words) joins the CPU port's frames as a record
 * whose switch field has DIGEST_RECORD set (eng_take_cpu), for the control
 * side to decode with the program's layouts.
 *
 * Not thread-safe by itself: one thread drives it (eng_run); a caller that
 * changes tables from another thread holds eng_lock around the change.
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PORT 510            /* egress_port is 9 bits and 511 is the drop port */
#define NPORT 512
#define MAX_PRIO 8
#define CLASSES 16
#define OTHER (CLASSES - 2)
#define UNCLASSIFIED (CLASSES - 1)
#define NEVER (-(INT64_C(1) << 62))
#define FOREVER (INT64_C(1) << 62)
#define FRAME_OVERHEAD 42       /* Ethernet 14 + IPv4 20 + UDP 8 before the cell header */
#define PFC_FRAME_LEN 60
#define MAX_FRAME 16384
#define DIGEST_RECORD 0x80000000u   /* a CPU-channel record that is a digest: (id, words) */
#define CUT_PORT 0x80000000u    /* an arrival's port with this bit: the frame was on a cable when it was cut */
#define FLIGHT_PORT 0x40000000u /* and with this one: the head of its cable's flight, the rest wait in the port */
#define PORT_BITS 0x3FFFFFFFu

typedef int64_t (*ingress_fn)(void *, void *, const uint8_t *, uint32_t, uint32_t, uint64_t, uint32_t);
typedef int64_t (*egress_fn)(void *, const uint8_t *, uint32_t, uint32_t, const uint64_t *, uint32_t, uint8_t *);
typedef uint32_t (*priority_fn)(const void *);
typedef void (*set_fn)(void *, uint32_t);
typedef void (*requests_fn)(const void *, uint64_t *);
typedef void (*copy_fn)(void *, const void *);
typedef void (*clone_i2e_fn)(void *, void *, const void *, uint32_t, const uint8_t *, uint32_t, uint32_t, uint64_t);
typedef void (*clone_e2e_fn)(void *, const void *, uint32_t);
typedef int64_t (*again_fn)(void *, void *, const void *, uint32_t, const uint8_t *, uint32_t, uint32_t, uint64_t,
                            uint32_t);
typedef int64_t (*egress_ctl_fn)(void *, const uint8_t *, uint32_t, uint32_t, const uint64_t *, uint32_t);
typedef int64_t (*deparse_fn)(void *, const uint8_t *, uint32_t, uint32_t, uint8_t *);
typedef uint32_t (*digest_fn)(const void *, uint64_t *);

enum { IT_NORMAL = 0, IT_INGRESS_CLONE = 1, IT_EGRESS_CLONE = 2, IT_RECIRC = 4, IT_REPLICATION = 5, IT_RESUBMIT = 6 };

/* a program's copy calls (program.py's C ABI; eng_set_replication): every one a switch has had is kept,
 * since packets queued under a previous program finish their egress with its own */
typedef struct repl_s {
    struct repl_s *next;
    void *inst;
    requests_fn requests;
    copy_fn copy;
    clone_i2e_fn clone_i2e;
    clone_e2e_fn clone_e2e;
    again_fn again;
    egress_ctl_fn egress_ctl;
    deparse_fn deparse;
    set_fn set_rid, set_type;
    priority_fn truncate;       /* tb_truncate: the limit the program set (ingress's or egress's) */
    digest_fn digest;           /* the program's tb_digest (0: it sends none) */
    uint32_t state_size, max_passes, digest_words;
} repl_t;

enum { PORT_NONE = 0, PORT_CABLE = 1, PORT_HOST = 2, PORT_WIRE = 3, PORT_CPU = 4 };
enum { EV_ARRIVAL = 0, EV_SERVICE = 1, EV_TRANSMIT = 2 };
#define FINE_US 16384
#define RX_BATCH 64
#define TX_BATCH 32
#define TX_BYTES (4 * MAX_FRAME)
#define PACKET_IGNORE_OUTGOING_OPT 23

/* tm/lag.py LagStats: lag samples in ns, a 1-us histogram below FINE_US, powers of two above */
typedef struct {
    uint64_t recorded, on_time, total_ns, max_ns;
    uint32_t fine[FINE_US], coarse[64];
} lag_t;

/* a frame on a cable into a port, behind the one the event list holds (see on_cable) */
typedef struct {
    int64_t t;
    uint64_t seq;               /* its place among events of its time, taken when it was sent */
    uint8_t *frame;
    uint32_t len, cut;
} flight;

/* a frame a wire port holds until its transmit time (tm/transmit.py) */
typedef struct hold {
    struct hold *next;
    int64_t at;
    uint32_t len;
    uint8_t data[];
} hold;

typedef struct pkt {
    struct pkt *next;
    int64_t eligible, enq_ns;
    uint32_t enq_depth, length, data_len;
    int32_t source;
    uint32_t passes, truncate;  /* resubmit/recirculation passes so far; bytes kept at transmit (0: all) */
    egress_fn egress;          /* the program it was queued under */
    repl_t *repl;              /* and its copy calls, when it makes clones, resubmits or recirculations */
    uint8_t *state, *data;     /* both inside this allocation */
} pkt;

typedef struct {
    pkt *head, *tail;
    uint32_t depth, limit, max_depth;
    uint64_t bytes, byte_limit;
    int64_t interval_ns, last_ns;
    uint64_t enqueued, dequeued, dropped_full, enq_bytes, deq_bytes, drop_bytes, passed, passed_bytes;
    uint64_t class_packets[CLASSES], class_bytes[CLASSES], class_drops[CLASSES];
    uint32_t weight;            /* DRR quantum in bytes; 0: strict priority (eng_queue_weight) */
    int64_t deficit;            /* DRR: bytes this queue may still send in its turn */
} queue;

typedef struct port_s {
    int kind, peer_sw, peer_port, host;
    int busy;                   /* something queued: next_ns is valid */
    int64_t rate_bps, delay_ns, free_ns, last_tx_ns, next_ns, armed_ns;
    int64_t host_last_ns;       /* a host port's frames leave in order: none before the previous one */
    int fd;                     /* a wire port's AF_PACKET socket */
    hold *hh, *ht;              /* a wire port's held frames, in transmit order */
    uint64_t tx_frames, tx_errors, rx_frames, rx_truncated;
    uint8_t *txbuf;             /* frames batched for sendmmsg, back to back (TX_BYTES) */
    uint32_t txoff[TX_BATCH], txlen[TX_BATCH], ntx, txused;
    struct port_s *flush_next;  /* the ports with batched frames, a list through the engine */
    FILE *pcap_in, *pcap_out;   /* switch/pcap.py's files: every frame received and sent */
    double loss;
    int paused;
    int64_t pause_until[MAX_PRIO];
    int64_t paused_since, paused_ns;
    uint64_t pauses_received, resumes_received, dropped_priority, dropped_priority_bytes;
    uint64_t lost_by_class[CLASSES];
    int down;                   /* the link is cut (eng_port_down) */
    uint64_t cut_lost;          /* frames sent into the cut link, or on their way in when it was cut */
    uint64_t cut_lost_by_class[CLASSES];
    uint64_t rx, tx;
    uint32_t peak;              /* deepest queue (packets) since the last eng_sample */
    int weighted;               /* some queue has a weight: deficit round robin among those (drr_pick) */
    uint32_t cursor;            /* DRR: the weighted queue whose turn it is */
    int drr_started;            /* DRR: the cursor's queue has had its quantum for this turn */
    /* the frames on the cable into this port after the one in the event list, in arrival order */
    flight *fl;
    uint32_t fl_cap, fl_head, fl_n;  /* a ring of fl_cap (a power of two) */
    int fl_armed;               /* a frame of this cable is in the event list */
    int64_t fl_last;            /* the arrival time of the last frame sent on it */
    queue q[MAX_PRIO];
} port;

typedef struct {
    void *inst;
    ingress_fn ingress;
    egress_fn egress;
    priority_fn priority;
    priority_fn mcast_grp;      /* multicast (eng_set_copies): tb_mcast_grp, or 0 */
    set_fn set_rid, set_type;
    uint32_t *groups, ngroups;  /* (group, rid, port) triples, each group's in replication order */
    uint8_t *replica;           /* one copy's state */
    repl_t *repl, *repls;       /* the copy calls of the program now (0: none), all the switch has had */
    uint32_t *sessions, nsessions;  /* clone sessions: (session, instance, port, packet_length_bytes) rows */
    digest_fn digest;           /* the program's tb_digest (eng_set_digests), or 0 */
    uint32_t digest_words;
    uint64_t jobs;              /* jobs ingress made (a packet that made none counts in ingress_drops) */
    uint32_t state_size, max_hdr, drop_port, nprio, index;
    /* defaults of ports made later (the TM's _default) */
    uint32_t d_limit, d_weight;
    uint64_t d_byte_limit;
    int64_t d_interval_ns, d_rate_bps, d_delay_ns;
    double d_loss;
    port *ports[NPORT];
    uint8_t *scratch, *out;
    uint64_t rng;
    /* PFC */
    int pfc_priority;           /* -1: off */
    uint32_t pfc_xoff, pfc_xon, pfc_pool, pfc_queued;
    uint32_t pfc_held[NPORT];
    uint8_t pfc_off[NPORT];
    uint64_t pfc_sent[NPORT][2];
    uint64_t stats[24];
    lag_t *deq_lag, *tx_lag;    /* real time only */
} sw_t;

/* switch counters, in this order (the binding names them) */
enum { S_RX, S_TX, S_INGRESS_DROPS, S_TM_DROPS, S_DROP_PORT, S_EGRESS_DROPS, S_PFC_RX, S_PFC_TX,
       S_PFC_MALFORMED, S_NO_INTERFACE, S_PIPELINE_ERRORS, S_NO_PIPELINE, S_CLONES, S_RESUBMITS, S_RECIRCS,
       S_REPLICAS, S_LOOP_DROPS, S_NSTATS };

typedef struct {
    int64_t t;
    uint32_t kind, sw, port, len;
    uint64_t seq;
    uint8_t *frame;
} event;

typedef struct {
    sw_t **sw;
    uint32_t nsw, capsw;
    event *heap;
    uint64_t nheap, capheap, seq;
    int64_t now;
    uint64_t seed;
    uint32_t cell_port;         /* the cells' UDP port (cells/wire.py), for the per-class counts */
    /* host deliveries */
    uint64_t *delivered, *host_pause_frames;
    uint8_t *host_paused;
    uint32_t nhost;
    int keep;
    uint8_t *kept;
    uint64_t nkept, capkept;
    int64_t window_ns;          /* eng_run_window: after a kept delivery at t, stop before t + window_ns */
    int64_t horizon;            /* eng_run_window: the last event time this call may process */
    uint64_t events, cell_hops, wakeups, thread_cpu_ns;
    clockid_t loop_clock;   /* the real-time loop's thread CPU clock; loop_clock_set once it runs */
    int loop_clock_set;
    pthread_mutex_t lock;
    /* real time */
    int rt, epfd, evfd, notify_fd;
    port *flush_head;           /* wire ports with batched frames, flushed at the end of each pass */
    int64_t epoch_ns;
    int64_t slack_ns;           /* a timed event may wait this long, so close ones share a wake-up */
    volatile int stop;
    uint8_t *cpu_frames;        /* frames for the CPU port: (uint32 switch, uint32 len, frame padded to 8) */
    uint64_t ncpu, capcpu;
} engine;

/* ---- small helpers ---------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {      /* splitmix64 */
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

static int64_t ser_ns(int64_t rate_bps, uint64_t length) {
    return rate_bps ? ((int64_t)length * INT64_C(8000000000) + rate_bps - 1) / rate_bps : 0;
}

static void lag_record(lag_t *l, int64_t lag) {
    if (!l) return;
    if (lag <= 0) {
        l->on_time++;
        return;
    }
    l->recorded++;
    l->total_ns += (uint64_t)lag;
    if ((uint64_t)lag > l->max_ns) l->max_ns = (uint64_t)lag;
    uint64_t us = (uint64_t)lag / 1000;
    if (us < FINE_US) {
        l->fine[us]++;
    } else {
        int bits = 0;
        while (us) bits++, us >>= 1;
        l->coarse[bits]++;
    }
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* cells/classify.py: the cell type of an IPv4 (no options) UDP frame to the cell port, else OTHER */
static int cell_class(const uint8_t *f, uint32_t n, uint32_t cell_port) {
    if (n >= FRAME_OVERHEAD + 1 && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45 && f[23] == 17 &&
        f[36] == (cell_port >> 8) && f[37] == (cell_port & 0xFF))
        return f[42] & 0x0F;
    return OTHER;
}

/* Python's round() of a non-negative float */
static int64_t round_half_even(double x) {
    int64_t fl = (int64_t)x;
    double diff = x - (double)fl;
    if (diff > 0.5 || (diff == 0.5 && (fl & 1))) fl++;
    return fl;
}

static int is_mac_control(const uint8_t *f, uint32_t n) { return n >= 14 && f[12] == 0x88 && f[13] == 0x08; }

/* ---- the event heap: (t, kind, seq) ------------------------------------ */

static int ev_less(const event *a, const event *b) {
    if (a->t != b->t) return a->t < b->t;
    if (a->kind != b->kind) return a->kind < b->kind;
    return a->seq < b->seq;
}

static int push_seq(engine *e, int64_t t, uint32_t kind, uint32_t sw, uint32_t port, uint8_t *frame, uint32_t len,
                    uint64_t seq) {
    if (e->nheap == e->capheap) {
        uint64_t cap = e->capheap ? e->capheap * 2 : 1024;
        event *h = realloc(e->heap, cap * sizeof *h);
        if (!h) return -1;
        e->heap = h, e->capheap = cap;
    }
    event ev = {t, kind, sw, port, len, seq, frame};
    uint64_t i = e->nheap++;
    while (i) {
        uint64_t up = (i - 1) / 2;
        if (!ev_less(&ev, &e->heap[up])) break;
        e->heap[i] = e->heap[up];
        i = up;
    }
    e->heap[i] = ev;
    return 0;
}

static int push(engine *e, int64_t t, uint32_t kind, uint32_t sw, uint32_t port, uint8_t *frame, uint32_t len) {
    return push_seq(e, t, kind, sw, port, frame, len, e->seq++);
}

/* A frame sent on a cable arrives at port `number` of switch `sw` at `at`. A cable delivers in the
 * order it sends (one serialisation after another, then the same delay), so only its first frame
 * in flight is in the event list; the others wait in the port's flight ring with the sequence
 * number they were sent with, and each enters the list when the one before it arrives
 * (next_flight). The list pops events in (time, kind, sequence) order, and a frame's successor
 * always comes after it in that order: the order of every event is the same as with every frame in
 * the list, which stays as small as the busy cables (htsim's rule) and so stays in cache. A frame
 * that would arrive before the last one sent (a pause frame, which jumps the queue) goes straight
 * into the list. */
static void on_cable(engine *e, uint32_t sw, uint32_t number, int64_t at, uint8_t *frame, uint32_t len) {
    port *q = sw < e->nsw && number <= MAX_PORT ? e->sw[sw]->ports[number] : 0;
    if (!q) {
        push(e, at, EV_ARRIVAL, sw, number, frame, len);
        return;
    }
    if (!q->fl_armed) {
        q->fl_armed = 1, q->fl_last = at;
        push(e, at, EV_ARRIVAL, sw, number | FLIGHT_PORT, frame, len);
        return;
    }
    if (at < q->fl_last) {
        push(e, at, EV_ARRIVAL, sw, number, frame, len);
        return;
    }
    if (q->fl_n == q->fl_cap) {
        uint32_t cap = q->fl_cap ? q->fl_cap * 2 : 16;
        flight *ring = malloc(cap * sizeof *ring);
        if (!ring) {
            push(e, at, EV_ARRIVAL, sw, number, frame, len);
            return;
        }
        for (uint32_t i = 0; i < q->fl_n; i++) ring[i] = q->fl[(q->fl_head + i) & (q->fl_cap - 1)];
        free(q->fl);
        q->fl = ring, q->fl_cap = cap, q->fl_head = 0;
    }
    q->fl[(q->fl_head + q->fl_n++) & (q->fl_cap - 1)] = (flight){at, e->seq++, frame, len, 0};
    q->fl_last = at;
}

/* the frame behind the one of port `number`'s cable that arrives now enters the event list */
static void next_flight(engine *e, uint32_t sw, uint32_t number) {
    port *q = e->sw[sw]->ports[number];
    if (!q->fl_n) {
        q->fl_armed = 0;
        return;
    }
    flight f = q->fl[q->fl_head];
    q->fl_head = (q->fl_head + 1) & (q->fl_cap - 1), q->fl_n--;
    push_seq(e, f.t, EV_ARRIVAL, sw, number | FLIGHT_PORT | (f.cut ? CUT_PORT : 0), f.frame, f.len, f.seq);
}

static event pop(engine *e) {
    event top = e->heap[0], last = e->heap[--e->nheap];
    uint64_t i = 0, n = e->nheap;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ev_less(&e->heap[c + 1], &e->heap[c])) c++;
        if (!ev_less(&e->heap[c], &last)) break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n) e->heap[i] = last;
    return top;
}

/* ---- ports ------------------------------------------------------------ */

static port *get_port(sw_t *s, uint32_t number) {
    if (number > MAX_PORT) return 0;
    port *p = s->ports[number];
    if (p) return p;
    p = calloc(1, sizeof *p);
    if (!p) return 0;
    p->rate_bps = s->d_rate_bps;
    p->delay_ns = s->d_delay_ns;
    p->loss = s->d_loss;
    p->peer_sw = p->peer_port = p->host = p->fd = -1;
    p->armed_ns = -1;
    p->paused_since = -1;
    for (uint32_t i = 0; i < MAX_PRIO; i++) {
        p->q[i].limit = s->d_limit;
        p->q[i].byte_limit = s->d_byte_limit;
        p->q[i].interval_ns = s->d_interval_ns;
        p->q[i].last_ns = NEVER;
        p->q[i].weight = s->d_weight;
    }
    p->weighted = s->d_weight != 0;
    s->ports[number] = p;
    return p;
}

static void arm(engine *e, uint32_t swi, uint32_t number, port *p) {
    if (!p->busy) return;
    if (p->armed_ns >= 0 && p->armed_ns <= p->next_ns) return;   /* an earlier or equal wake-up is pending */
    p->armed_ns = p->next_ns;
    push(e, p->next_ns, EV_SERVICE, swi, number, 0, 0);
}

/* ---- output: a frame leaves `port` of switch `swi`, reaching its far end at `at` ---- */

static void host_receives(engine *e, int host, int64_t at, const uint8_t *f, uint32_t n) {
    if (host < 0 || (uint32_t)host >= e->nhost) return;
    if (is_mac_control(f, n)) {
        e->host_pause_frames[host]++;
        if (n >= 14 + 20 && f[14] == 0x01 && f[15] == 0x01) {   /* PFC: priority 0's time */
            if (f[17] & 1) e->host_paused[host] = (f[18] | f[19]) != 0;
        }
    } else {
        e->delivered[host]++;
    }
    if (!e->keep) return;
    uint64_t need = 16 + ((n + 7) & ~7u);
    if (e->nkept + need > e->capkept) {
        uint64_t cap = e->capkept ? e->capkept * 2 : 1 << 20;
        while (cap < e->nkept + need) cap *= 2;
        uint8_t *k = realloc(e->kept, cap);
        if (!k) return;
        e->kept = k, e->capkept = cap;
    }
    uint8_t *r = e->kept + e->nkept;
    if (e->window_ns > 0 && at + e->window_ns - 1 < e->horizon) e->horizon = at + e->window_ns - 1;
    int64_t t = at;
    uint32_t h = (uint32_t)host;
    memcpy(r, &t, 8);
    memcpy(r + 8, &h, 4);
    memcpy(r + 12, &n, 4);
    memcpy(r + 16, f, n);
    e->nkept += need;
}

static uint32_t sw_index(engine *e, sw_t *s) {
    (void)e;
    return s->index;
}

/* ---- pcap (switch/pcap.py's format: classic libpcap, microseconds, Ethernet) ---- */

static FILE *pcap_open(const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    setvbuf(f, 0, _IOFBF, 1 << 16);
    uint32_t h[6] = {0xA1B2C3D4u, 2u | (4u << 16), 0, 0, 262144, 1};
    fwrite(h, 4, 6, f);
    return f;
}

static void pcap_write(FILE *f, const uint8_t *d, uint32_t n) {
    if (!f) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint32_t r[4] = {(uint32_t)ts.tv_sec, (uint32_t)(ts.tv_nsec / 1000), n, n};
    fwrite(r, 4, 4, f);
    fwrite(d, 1, n, f);
}

/* A wire port's frames due now are batched and handed to the kernel with one sendmmsg per port at
 * the end of each pass (wire_flush), in order; a full batch goes at once. */
static void wire_flush_port(port *p) {
    uint32_t done = 0;
    while (done < p->ntx) {
        struct mmsghdr msgs[TX_BATCH];
        struct iovec iov[TX_BATCH];
        uint32_t n = p->ntx - done;
        for (uint32_t i = 0; i < n; i++) {
            iov[i].iov_base = p->txbuf + p->txoff[done + i], iov[i].iov_len = p->txlen[done + i];
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i], msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int sent = sendmmsg(p->fd, msgs, n, MSG_DONTWAIT);
        if (sent <= 0) {   /* the first frame was refused (EMSGSIZE, ENOBUFS, link down): count it, go on */
            p->tx_errors++;
            done++;
            continue;
        }
        p->tx_frames += (uint64_t)sent;
        done += (uint32_t)sent;
    }
    p->ntx = 0;
    p->txused = 0;
}

static void wire_send(engine *e, port *p, const uint8_t *f, uint32_t n) {
    if (!p->txbuf) {
        p->txbuf = malloc(TX_BYTES);
        if (!p->txbuf) {
            p->tx_errors++;
            return;
        }
    }
    pcap_write(p->pcap_out, f, n);
    if (p->ntx == TX_BATCH || p->txused + n > TX_BYTES) wire_flush_port(p);
    memcpy(p->txbuf + p->txused, f, n);
    p->txoff[p->ntx] = p->txused;
    p->txlen[p->ntx++] = n;
    p->txused += n;
    if (!p->flush_next && e->flush_head != p) {   /* remember the port for the end of the pass */
        p->flush_next = e->flush_head ? e->flush_head : p;
        e->flush_head = p;
    }
}

/* every wire port's batched frames out (end of a pass) */
static void wire_flush(engine *e) {
    port *p = e->flush_head;
    while (p) {
        port *next = p->flush_next == p ? 0 : p->flush_next;
        if (p->ntx) wire_flush_port(p);
        p->flush_next = 0;
        p = next;
    }
    e->flush_head = 0;
}

/* tm/transmit.py and the switch's _release: out now when due and nothing of the port is held,
 * else held (never before the port's previous held frame) until `at` */
static void wire_transmit(engine *e, sw_t *s, uint32_t number, port *p, int64_t at, const uint8_t *f, uint32_t n) {
    if (!p->hh && at <= e->now) {
        lag_record(s->tx_lag, e->now - at);
        wire_send(e, p, f, n);
        return;
    }
    hold *h = malloc(sizeof *h + n);
    if (!h) {
        p->tx_errors++;
        return;
    }
    if (p->ht && at < p->ht->at) at = p->ht->at;
    h->next = 0, h->at = at, h->len = n;
    memcpy(h->data, f, n);
    if (p->ht) {
        p->ht->next = h;
    } else {
        p->hh = h;
        push(e, at, EV_TRANSMIT, sw_index(e, s), number, 0, 0);
    }
    p->ht = h;
}

/* every held frame of a wire port due by `now` goes out; the next one is armed */
static void wire_release(engine *e, uint32_t swi, uint32_t number, int64_t now) {
    sw_t *s = e->sw[swi];
    port *p = s->ports[number];
    if (!p) return;
    while (p->hh && p->hh->at <= now) {
        hold *h = p->hh;
        p->hh = h->next;
        if (!p->hh) p->ht = 0;
        lag_record(s->tx_lag, now - h->at);
        wire_send(e, p, h->data, h->len);
        free(h);
    }
    if (p->hh) push(e, p->hh->at, EV_TRANSMIT, swi, number, 0, 0);
}

static void cpu_receives(engine *e, sw_t *s, const uint8_t *f, uint32_t n) {
    uint64_t need = 8 + ((n + 7) & ~7u);
    if (e->ncpu + need > e->capcpu) {
        uint64_t cap = e->capcpu ? e->capcpu * 2 : 1 << 16;
        while (cap < e->ncpu + need) cap *= 2;
        uint8_t *c = realloc(e->cpu_frames, cap);
        if (!c) return;
        e->cpu_frames = c, e->capcpu = cap;
    }
    uint32_t swi = sw_index(e, s);
    memcpy(e->cpu_frames + e->ncpu, &swi, 4);
    memcpy(e->cpu_frames + e->ncpu + 4, &n, 4);
    memcpy(e->cpu_frames + e->ncpu + 8, f, n);
    e->ncpu += need;
    if (e->notify_fd >= 0) {   /* the control side (Python) waits on it */
        uint64_t one = 1;
        (void)!write(e->notify_fd, &one, 8);
    }
}

static void transmit(engine *e, sw_t *s, uint32_t number, int64_t at, const uint8_t *f, uint32_t n) {
    port *p = s->ports[number];
    if (!p || p->kind == PORT_NONE) {
        s->stats[S_NO_INTERFACE]++;
        return;
    }
    p->tx++;
    s->stats[S_TX]++;
    if (p->down && (p->kind == PORT_CABLE || p->kind == PORT_HOST)) {
        p->cut_lost++;
        p->cut_lost_by_class[cell_class(f, n, e->cell_port)]++;
        return;
    }
    if (p->kind == PORT_WIRE) {
        wire_transmit(e, s, number, p, at, f, n);
        return;
    }
    if (p->kind == PORT_CPU) {
        cpu_receives(e, s, f, n);
        return;
    }
    if (p->kind == PORT_HOST) {
        if (at < p->host_last_ns) at = p->host_last_ns;
        p->host_last_ns = at;
        host_receives(e, p->host, at, f, n);
        return;
    }
    pcap_write(p->pcap_out, f, n);
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) return;
    memcpy(copy, f, n);
    on_cable(e, (uint32_t)p->peer_sw, (uint32_t)p->peer_port, at, copy, n);
}

/* the digest an ingress pass asked for (if any), into the CPU channel: switch | DIGEST_RECORD, the
 * record's length, then the layout id + 1 and its words as uint64 (see the header) */
static void take_digest(engine *e, sw_t *s, digest_fn digest, uint32_t words, const uint8_t *state) {
    uint32_t n = (1 + words) * 8;
    uint64_t need = 8 + n;
    if (e->ncpu + need > e->capcpu) {
        uint64_t cap = e->capcpu ? e->capcpu * 2 : 1 << 16;
        while (cap < e->ncpu + need) cap *= 2;
        uint8_t *c = realloc(e->cpu_frames, cap);
        if (!c) return;
        e->cpu_frames = c, e->capcpu = cap;
    }
    uint8_t *r = e->cpu_frames + e->ncpu;   /* 8-byte aligned: every record's length is */
    uint64_t id = digest(state, (uint64_t *)(r + 16));
    if (!id) return;
    uint32_t tag = sw_index(e, s) | DIGEST_RECORD;
    memcpy(r, &tag, 4);
    memcpy(r + 4, &n, 4);
    memcpy(r + 8, &id, 8);
    e->ncpu += need;
    if (e->notify_fd >= 0) {
        uint64_t one = 1;
        (void)!write(e->notify_fd, &one, 8);
    }
}

/* ---- PFC ---------------------------------------------------------------- */

static void send_pause(engine *e, sw_t *s, uint32_t source, int pause, int64_t at) {
    uint8_t f[PFC_FRAME_LEN] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01,
                                0x02, 0, 0, 0, (uint8_t)(source >> 8), (uint8_t)source, 0x88, 0x08, 0x01, 0x01};
    int prio = s->pfc_priority;
    f[16] = 0;
    f[17] = (uint8_t)(1u << prio);
    if (pause) f[18 + 2 * prio] = 0xFF, f[19 + 2 * prio] = 0xFF;
    port *p = get_port(s, source);
    if (!p) return;
    s->stats[S_PFC_TX]++;
    transmit(e, s, source, at + ser_ns(p->rate_bps, PFC_FRAME_LEN) + p->delay_ns, f, PFC_FRAME_LEN);
}

static void pfc_charge(engine *e, sw_t *s, int32_t source, int64_t now) {
    s->pfc_queued++;
    if (source < 0) return;
    uint32_t held = ++s->pfc_held[source];
    if (held >= s->pfc_xoff && !s->pfc_off[source]) {
        s->pfc_off[source] = 1;
        s->pfc_sent[source][0]++;
        send_pause(e, s, (uint32_t)source, 1, now);
    }
}

static void pfc_release(engine *e, sw_t *s, int32_t source, int64_t at) {
    s->pfc_queued--;
    if (source < 0) return;
    uint32_t held = --s->pfc_held[source];
    if (held <= s->pfc_xon && s->pfc_off[source]) {
        s->pfc_off[source] = 0;
        s->pfc_sent[source][1]++;
        send_pause(e, s, (uint32_t)source, 0, at);
    }
}

/* ---- the traffic manager ------------------------------------------------ */

static void egress_copies(engine *e, sw_t *s, uint32_t number, const pkt *k, uint8_t *state,
                          const uint64_t q5[5], int64_t t, int64_t at);

static void depart(engine *e, sw_t *s, uint32_t number, uint32_t prio, pkt *k, int64_t t, uint32_t deq_depth,
                   int64_t at) {
    uint64_t q5[5];
    uint64_t enq_us = (uint64_t)(k->enq_ns / 1000), deq_us = (uint64_t)(t / 1000);
    q5[0] = enq_us, q5[1] = k->enq_depth, q5[2] = deq_us - enq_us, q5[3] = deq_depth, q5[4] = deq_us;
    (void)prio;
    if (k->repl) {
        egress_copies(e, s, number, k, k->state, q5, t, at);
        return;
    }
    int64_t n = k->egress(k->state, k->data, k->data_len, number, q5, s->drop_port, s->out);
    if (n < 0) {
        s->stats[S_EGRESS_DROPS]++;
        return;
    }
    transmit(e, s, number, at, s->out, (uint32_t)n);
}

/* tm/model.py _drr_pick: the weighted queue port p serves at t, by deficit round robin (a weighted
 * queue's head is eligible at t); the same steps in the same order */
static int drr_pick(port *p, uint32_t nq, int64_t t) {
    for (;;) {
        uint32_t i = p->cursor;
        queue *q = &p->q[i];
        if (q->weight) {
            if (q->head && q->head->eligible <= t && p->pause_until[i] <= t) {
                if (!p->drr_started) {
                    q->deficit += q->weight;
                    p->drr_started = 1;
                }
                if (q->deficit >= (int64_t)q->head->length) return (int)i;
            } else if (!q->head) {
                q->deficit = 0;
            }
        }
        p->cursor = i + 1 < nq ? i + 1 : 0;
        p->drr_started = 0;
    }
}

/* serve port p up to `until` in model time (tm/model.py _run_port) */
static void run_port(engine *e, sw_t *s, uint32_t number, port *p, int64_t until) {
    int64_t free_ns = p->free_ns, last_tx = p->last_tx_ns;
    uint32_t nq = s->nprio;
    p->busy = 0;
    for (;;) {
        int64_t head = -1;
        for (uint32_t i = 0; i < nq; i++) {
            queue *q = &p->q[i];
            if (!q->head) continue;
            int64_t el = q->head->eligible;
            if (p->pause_until[i] > el) el = p->pause_until[i];
            if (head < 0 || el < head) head = el;
        }
        if (head < 0) {
            p->busy = 0;   /* a copy queued here by an egress of this loop may have set it */
            break;
        }
        int64_t t = free_ns > head ? free_ns : head;
        if (t > until) {
            p->busy = 1;
            p->next_ns = t;
            break;
        }
        int prio = (int)nq - 1;
        if (!p->weighted) {
            for (; prio > 0; prio--) {
                queue *q = &p->q[prio];
                if (q->head && q->head->eligible <= t && p->pause_until[prio] <= t) break;
            }
        } else {
            for (; prio >= 0; prio--) {   /* strict queues first; with none eligible, DRR */
                queue *q = &p->q[prio];
                if (q->head && q->head->eligible <= t && p->pause_until[prio] <= t && !q->weight) break;
            }
            if (prio < 0) prio = drr_pick(p, nq, t);
        }
        queue *q = &p->q[prio];
        pkt *k = q->head;
        if (q->weight) {
            q->deficit -= k->length;
            if (!k->next) q->deficit = 0;
        }
        q->head = k->next;
        if (!q->head) q->tail = 0;
        q->depth--;
        if (prio == s->pfc_priority) pfc_release(e, s, k->source, t);
        q->bytes -= k->length;
        q->dequeued++;
        q->deq_bytes += k->length;
        free_ns = t + ser_ns(p->rate_bps, k->length);
        int64_t at = free_ns + p->delay_ns;
        if (at < last_tx) at = last_tx;
        last_tx = at;
        p->free_ns = free_ns, p->last_tx_ns = last_tx;
        e->cell_hops++;
        if (e->rt) lag_record(s->deq_lag, e->now - t);
        depart(e, s, number, (uint32_t)prio, k, t, q->depth, at);
        free(k);
        free_ns = p->free_ns, last_tx = p->last_tx_ns;   /* what an egress's copies did to this port */
    }
    p->free_ns = free_ns;
    p->last_tx_ns = last_tx;
}

/* tm/model.py offer(): queue a packet (its state and data) or drop it */
static void offer(engine *e, sw_t *s, uint32_t number, port *p, uint32_t prio, const uint8_t *state,
                  const uint8_t *data, uint32_t data_len, uint32_t length, int cls, int32_t source, int64_t now,
                  const pkt *like) {
    if (p->busy && p->next_ns < now) run_port(e, s, number, p, now - 1);
    if (prio >= s->nprio) {
        p->dropped_priority++;
        p->dropped_priority_bytes += length;
        s->stats[S_TM_DROPS]++;
        return;
    }
    if (p->loss > 0 && rng_uniform(&s->rng) < p->loss) {
        p->lost_by_class[cls]++;
        s->stats[S_TM_DROPS]++;
        return;
    }
    queue *q = &p->q[prio];
    int lossless = (int)prio == s->pfc_priority;
    if ((lossless ? s->pfc_queued >= s->pfc_pool : q->depth >= q->limit) ||
        (q->byte_limit && q->bytes + length > q->byte_limit)) {
        q->dropped_full++;
        q->drop_bytes += length;
        q->class_drops[cls]++;
        s->stats[S_TM_DROPS]++;
        return;
    }
    uint32_t size = like && like->repl ? like->repl->state_size : s->state_size;
    uint32_t ss = (size + 15) & ~15u;
    pkt *k = malloc(sizeof *k + ss + data_len);
    if (!k) {
        s->stats[S_PIPELINE_ERRORS]++;
        return;
    }
    k->state = (uint8_t *)(k + 1);
    k->data = k->state + ss;
    memcpy(k->state, state, size);
    memcpy(k->data, data, data_len);
    int64_t eligible = q->last_ns + q->interval_ns;
    if (eligible < now) eligible = now;
    q->last_ns = eligible;
    if (lossless)
        pfc_charge(e, s, source, now);
    else
        source = -1;
    k->next = 0, k->eligible = eligible, k->enq_ns = now, k->enq_depth = q->depth, k->egress = s->egress;
    k->length = length, k->data_len = data_len, k->source = source;
    k->passes = like ? like->passes : 0, k->truncate = like ? like->truncate : 0;
    k->repl = like ? like->repl : 0;
    if (like) k->egress = like->egress;
    if (q->tail) q->tail->next = k; else q->head = k;
    q->tail = k;
    if (q->depth >= q->max_depth) q->max_depth = q->depth + 1;
    q->depth++;
    if (q->depth > p->peak) p->peak = q->depth;
    q->bytes += length;
    q->enqueued++;
    q->enq_bytes += length;
    q->class_packets[cls]++;
    q->class_bytes[cls] += length;
    int64_t start = p->free_ns > eligible ? p->free_ns : eligible;
    if (p->paused && p->pause_until[prio] > start) start = p->pause_until[prio];
    if (!p->busy) {
        p->busy = 1;
        p->next_ns = start;
    } else if (start < p->next_ns) {
        p->next_ns = start;
    }
}

/* tm/model.py depart_now(): the transmit time when the link is idle, else -1 */
static int64_t depart_now(sw_t *s, port *p, uint32_t prio, int64_t now, uint32_t length, int cls) {
    if (p->busy || p->free_ns > now || p->loss > 0 || p->paused || p->weighted || prio >= s->nprio) return -1;
    queue *q = &p->q[prio];
    if (q->last_ns + q->interval_ns > now || !q->limit || (q->byte_limit && length > q->byte_limit)) return -1;
    q->last_ns = now;
    q->passed++;
    q->passed_bytes += length;
    q->class_packets[cls]++;
    q->class_bytes[cls] += length;
    if (!q->max_depth) q->max_depth = 1;
    if (!p->peak) p->peak = 1;
    int64_t t = now + ser_ns(p->rate_bps, length);
    p->free_ns = t;
    int64_t at = t + p->delay_ns;
    if (at < p->last_tx_ns) return p->last_tx_ns;
    p->last_tx_ns = at;
    return at;
}

/* a PFC frame arrived on `number` at `at` (tm/model.py pause() and the switch's _on_pause_frame) */
static void on_pause_frame(engine *e, sw_t *s, uint32_t number, const uint8_t *f, uint32_t n, int64_t at) {
    if (n < 14 + 20 || f[14] != 0x01 || f[15] != 0x01) {
        s->stats[S_PFC_MALFORMED]++;
        return;
    }
    s->stats[S_PFC_RX]++;
    port *p = get_port(s, number);
    if (!p) return;
    uint32_t enabled = ((uint32_t)f[16] << 8) | f[17];
    for (uint32_t prio = 0; prio < 8; prio++) {
        if (!(enabled >> prio & 1)) continue;
        uint32_t quanta = ((uint32_t)f[18 + 2 * prio] << 8) | f[19 + 2 * prio];
        int64_t until = 0;
        if (quanta) until = p->rate_bps ? at + round_half_even((double)quanta * 512.0 / (double)p->rate_bps * 1e9)
                                        : FOREVER;
        if (prio >= s->nprio) continue;
        if (p->busy && p->next_ns < at) run_port(e, s, number, p, at - 1);
        if (p->free_ns < at) p->free_ns = at;
        int was = p->pause_until[prio] > at, now_paused = until > at;
        p->pause_until[prio] = now_paused ? until : 0;
        if (now_paused && !was) {
            p->pauses_received++;
            if (p->paused_since < 0) p->paused_since = at;
        } else if (!now_paused) {
            p->resumes_received++;
        }
        int any = 0;
        for (uint32_t i = 0; i < s->nprio; i++) any |= p->pause_until[i] > at;
        p->paused = any;
        if (!any && p->paused_since >= 0) {
            p->paused_ns += at - p->paused_since;
            p->paused_since = -1;
        }
        int64_t nxt = -1;
        for (uint32_t i = 0; i < s->nprio; i++) {
            if (!p->q[i].head) continue;
            int64_t el = p->q[i].head->eligible;
            if (p->pause_until[i] > el) el = p->pause_until[i];
            if (nxt < 0 || el < nxt) nxt = el;
        }
        if (nxt >= 0) {
            if (p->free_ns > nxt) nxt = p->free_ns;
            p->next_ns = nxt;
            p->busy = 1;
            p->armed_ns = -1;   /* the pending wake-up may now be late: arm anew */
        }
    }
}

/* a packet after ingress (its state) to port `out`: egress at once when the link is idle, else queued.
 * prio < 0: the program's tb_priority of the state; like: the job's passes, truncation and copy calls
 * (0: a packet of a program that makes no clones, resubmits or recirculations) */
static void forward(engine *e, sw_t *s, uint32_t swi, uint32_t number, uint32_t out, uint8_t *state,
                    const uint8_t *f, uint32_t n, int cls, int64_t now, int prio_or_own, const pkt *like) {
    uint64_t now_us = (uint64_t)(now / 1000);
    port *p = get_port(s, out);
    if (!p) {
        s->stats[S_PIPELINE_ERRORS]++;
        return;
    }
    uint32_t prio = prio_or_own >= 0 ? (uint32_t)prio_or_own : s->priority ? s->priority(state) : 0;
    int64_t at = depart_now(s, p, prio, now, n, cls);
    if (at >= 0) {
        uint64_t q5[5] = {now_us, 0, 0, 0, now_us};
        e->cell_hops++;
        if (e->rt) lag_record(s->deq_lag, 0);
        if (like && like->repl) {
            pkt job = *like;
            job.data = (uint8_t *)f, job.data_len = n;
            egress_copies(e, s, out, &job, state, q5, now, at);
            return;
        }
        int64_t m = s->egress(state, f, n, out, q5, s->drop_port, s->out);
        if (m < 0)
            s->stats[S_EGRESS_DROPS]++;
        else
            transmit(e, s, out, at, s->out, (uint32_t)m);
        return;
    }
    offer(e, s, out, p, prio, state, f, n, n, cls, (int32_t)number, now, like);
    arm(e, swi, out, p);
}

/* multicast: one copy of the ingress state per (rid, port) of `group` (see the header) */
static void replicate(engine *e, sw_t *s, uint32_t swi, uint32_t number, uint32_t group, const uint8_t *f,
                      uint32_t n, int cls, int64_t now) {
    for (uint32_t i = 0; i < s->ngroups; i++) {
        const uint32_t *g = s->groups + 3 * (size_t)i;
        if (g[0] != group) continue;
        memcpy(s->replica, s->scratch, s->state_size);
        s->set_rid(s->replica, g[1]);
        s->set_type(s->replica, 5);
        s->stats[S_REPLICAS]++;
        forward(e, s, swi, number, g[2], s->replica, f, n, cls, now, -1, 0);
    }
}

/* ---- clones, resubmit and recirculation (see the header) --------------------------------------- */

/* A job made by a program with copy calls: to `out` through the idle-link fast path (made by ingress),
 * or queued with no source port and unclassified (made by an egress: v1model's "more" jobs). */
static void put_job(engine *e, sw_t *s, uint32_t number, uint32_t out, uint8_t *state, const uint8_t *f,
                    uint32_t n, int cls, int64_t now, uint32_t prio, const pkt *like, int queued) {
    if (!queued) {
        s->jobs++;
        forward(e, s, s->index, number, out, state, f, n, cls, now, (int)prio, like);
        return;
    }
    if ((uint32_t)out == s->drop_port) {
        s->stats[S_DROP_PORT]++;
        return;
    }
    port *p = get_port(s, out);
    if (!p) {
        s->stats[S_PIPELINE_ERRORS]++;
        return;
    }
    offer(e, s, out, p, prio, state, f, n, n, UNCLASSIFIED, -1, now, like);
    arm(e, s->index, out, p);
}

/* The after-ingress decisions of one pass whose state is `st` (frame f of n bytes, in on `number`):
 * I2E clones, then resubmit (returned: 1 + its field list, the pass ends), multicast, drop, unicast. */
static uint64_t after_ingress(engine *e, sw_t *s, repl_t *R, uint32_t number, const uint8_t *f, uint32_t n,
                              uint8_t *st, uint32_t passes, int cls, int64_t now, int queued) {
    uint64_t r[7];
    R->requests(st, r);
    pkt like;
    memset(&like, 0, sizeof like);
    like.repl = R, like.passes = passes, like.egress = s->egress;
    uint8_t *copy = 0;
    if (r[3] || r[1]) {
        copy = malloc(R->state_size + 16);
        if (!copy) {
            s->stats[S_PIPELINE_ERRORS]++;
            return 0;
        }
    }
    if (r[3]) {
        uint32_t session = (uint32_t)(r[3] - 1) & 0x7FFF;
        for (uint32_t i = 0; i < s->nsessions; i++) {
            const uint32_t *row = s->sessions + 4 * (size_t)i;
            if (row[0] != session) continue;
            R->clone_i2e(R->inst, copy, st, (uint32_t)r[4], f, n, number, (uint64_t)(now / 1000));
            R->set_rid(copy, row[1]);
            s->stats[S_CLONES]++;
            like.truncate = row[3];
            put_job(e, s, number, row[2], copy, f, n, cls, now, 0, &like, queued);
        }
        like.truncate = 0;
    }
    if (R->digest) take_digest(e, s, R->digest, R->digest_words, st);
    if (r[5]) {
        free(copy);
        return r[5];
    }
    if (r[1]) {
        uint32_t group = (uint32_t)r[1];
        for (uint32_t i = 0; i < s->ngroups; i++) {
            const uint32_t *g = s->groups + 3 * (size_t)i;
            if (g[0] != group) continue;
            R->copy(copy, st);
            R->set_rid(copy, g[1]);
            R->set_type(copy, IT_REPLICATION);
            s->stats[S_REPLICAS]++;
            put_job(e, s, number, g[2], copy, f, n, cls, now, (uint32_t)r[2], &like, queued);
        }
        free(copy);
        return 0;
    }
    free(copy);
    if (r[0] == s->drop_port) return 0;   /* no job (arrive counts a packet that made none) */
    R->set_type(st, IT_NORMAL);
    put_job(e, s, number, (uint32_t)r[0], st, f, n, cls, now, (uint32_t)r[2], &like, queued);
    return 0;
}

/* Ingress again with the original bytes while a pass asks for it (resubmit: 1 + field list, 0: none;
 * old: that pass's state), each pass bounded by R->max_passes. */
static void resubmits(engine *e, sw_t *s, repl_t *R, uint32_t number, const uint8_t *f, uint32_t n,
                      const uint8_t *old, uint64_t resubmit, uint32_t passes, int cls, int64_t now, int queued) {
    uint8_t *mine = 0;
    while (resubmit) {
        passes++;
        s->stats[S_RESUBMITS]++;
        if (passes >= R->max_passes) {
            s->stats[S_LOOP_DROPS]++;
            break;
        }
        uint8_t *st = malloc(R->state_size + 16);
        if (!st) {
            s->stats[S_PIPELINE_ERRORS]++;
            break;
        }
        R->again(R->inst, st, old, (uint32_t)(resubmit - 1), f, n, IT_RESUBMIT, (uint64_t)(now / 1000),
                 s->drop_port);
        free(mine);
        mine = st, old = st;
        resubmit = after_ingress(e, s, R, number, f, n, st, passes, cls, now, queued);
    }
    free(mine);
}

/* The egress of job k (its state `st`: the queued copy, or the caller's on the fast path) on port
 * `number`, dequeued at t, leaving at `at`: egress control, E2E clones, drop, deparse, then recirculate
 * or transmit (cut to k->truncate). */
static void egress_copies(engine *e, sw_t *s, uint32_t number, const pkt *k, uint8_t *st, const uint64_t q5[5],
                          int64_t t, int64_t at) {
    repl_t *R = k->repl;
    int dropped = R->egress_ctl(st, k->data, k->data_len, number, q5, s->drop_port) < 0;
    uint64_t r[7];
    R->requests(st, r);
    if (r[3]) {
        uint32_t session = (uint32_t)(r[3] - 1) & 0x7FFF;
        uint8_t *copy = malloc(R->state_size + 16);
        if (!copy) {
            s->stats[S_PIPELINE_ERRORS]++;
        } else {
            pkt like = *k;
            for (uint32_t i = 0; i < s->nsessions; i++) {
                const uint32_t *row = s->sessions + 4 * (size_t)i;
                if (row[0] != session) continue;
                R->clone_e2e(copy, st, (uint32_t)r[4]);
                R->set_rid(copy, row[1]);
                s->stats[S_CLONES]++;
                like.truncate = row[3];
                put_job(e, s, number, row[2], copy, k->data, k->data_len, UNCLASSIFIED, t, 0, &like, 1);
            }
            free(copy);
        }
    }
    if (dropped) {
        s->stats[S_EGRESS_DROPS]++;
        return;
    }
    int64_t m = R->deparse(st, k->data, k->data_len, s->drop_port, s->out);
    if (r[6]) {
        uint32_t passes = k->passes + 1;
        s->stats[S_RECIRCS]++;
        if (passes >= R->max_passes) {
            s->stats[S_LOOP_DROPS]++;
            return;
        }
        uint8_t *bytes = m <= MAX_FRAME ? malloc((size_t)m + 1) : 0, *next = malloc(R->state_size + 16);
        if (!bytes || !next) {
            free(bytes), free(next);
            s->stats[S_PIPELINE_ERRORS]++;
            return;
        }
        memcpy(bytes, s->out, (size_t)m);
        R->again(R->inst, next, st, (uint32_t)(r[6] - 1), bytes, (uint32_t)m, IT_RECIRC, (uint64_t)(t / 1000),
                 s->drop_port);
        uint64_t resubmit = after_ingress(e, s, R, 0, bytes, (uint32_t)m, next, passes, UNCLASSIFIED, t, 1);
        resubmits(e, s, R, 0, bytes, (uint32_t)m, next, resubmit, passes, UNCLASSIFIED, t, 1);
        free(next), free(bytes);
        return;
    }
    uint32_t limit = k->truncate, cut = R->truncate(st);   /* the clone session's; the program's */
    if (cut && (!limit || cut < limit)) limit = cut;
    if (limit && (uint64_t)m > limit) m = limit;
    transmit(e, s, number, at, s->out, (uint32_t)m);
}

/* one frame arrives at port `number` of switch `swi` at `now` (the switch's receive_frames) */
static void arrive(engine *e, uint32_t swi, uint32_t number, const uint8_t *f, uint32_t n, int64_t now) {
    sw_t *s = e->sw[swi];
    s->stats[S_RX]++;
    port *in = s->ports[number];
    if (in) {
        in->rx++;
        pcap_write(in->pcap_in, f, n);
    }
    if (is_mac_control(f, n)) {
        on_pause_frame(e, s, number, f, n, now);
        if (in) arm(e, swi, number, in);
        return;
    }
    if (!s->ingress) {
        s->stats[S_NO_PIPELINE]++;
        return;
    }
    if (n > MAX_FRAME) {
        s->stats[S_PIPELINE_ERRORS]++;
        return;
    }
    int cls = cell_class(f, n, e->cell_port);
    uint64_t now_us = (uint64_t)(now / 1000);
    int64_t out = s->ingress(s->inst, s->scratch, f, n, number, now_us, s->drop_port);
    if (s->digest && !s->repl) take_digest(e, s, s->digest, s->digest_words, s->scratch);
    if (s->repl) {   /* as the Python switch loop counts: a packet whose ingress made no job */
        repl_t *R = s->repl;
        uint64_t before = s->jobs;
        uint64_t resubmit = after_ingress(e, s, R, number, f, n, s->scratch, 0, cls, now, 0);
        resubmits(e, s, R, number, f, n, s->scratch, resubmit, 0, cls, now, 0);
        if (s->jobs == before) s->stats[S_INGRESS_DROPS]++;
        return;
    }
    if (s->mcast_grp) {
        uint32_t group = s->mcast_grp(s->scratch);
        if (group) {
            uint64_t before = s->stats[S_REPLICAS];
            replicate(e, s, swi, number, group, f, n, cls, now);
            if (s->stats[S_REPLICAS] == before) s->stats[S_INGRESS_DROPS]++;   /* an empty or unknown group */
            return;
        }
        if (out >= 0) s->set_type(s->scratch, 0);   /* unicast: instance_type NORMAL */
    }
    if (out < 0) {
        s->stats[S_INGRESS_DROPS]++;
        return;
    }
    if ((uint32_t)out == s->drop_port) {
        s->stats[S_DROP_PORT]++;
        return;
    }
    forward(e, s, swi, number, (uint32_t)out, s->scratch, f, n, cls, now, -1, 0);
}

/* ---- the C API ------------------------------------------------------------ */

void *eng_new(uint64_t seed, uint32_t hosts, uint32_t cell_port) {
    engine *e = calloc(1, sizeof *e);
    if (!e) return 0;
    e->seed = seed;
    e->cell_port = cell_port;
    e->nhost = hosts;
    e->delivered = calloc(hosts + 1, 8);
    e->host_pause_frames = calloc(hosts + 1, 8);
    e->host_paused = calloc(hosts + 1, 1);
    pthread_mutex_init(&e->lock, 0);
    e->epfd = e->evfd = e->notify_fd = -1;
    if (!e->delivered || !e->host_pause_frames || !e->host_paused) {
        free(e->delivered), free(e->host_pause_frames), free(e->host_paused), free(e);
        return 0;
    }
    return e;
}

void eng_free(void *ep) {
    engine *e = ep;
    if (!e) return;
    for (uint64_t i = 0; i < e->nheap; i++) free(e->heap[i].frame);
    for (uint32_t i = 0; i < e->nsw; i++) {
        sw_t *s = e->sw[i];
        for (uint32_t n = 0; n < NPORT; n++) {
            port *p = s->ports[n];
            if (!p) continue;
            for (uint32_t q = 0; q < MAX_PRIO; q++)
                for (pkt *k = p->q[q].head, *nx; k; k = nx) nx = k->next, free(k);
            for (hold *h = p->hh, *nx; h; h = nx) nx = h->next, free(h);
            for (uint32_t i = 0; i < p->fl_n; i++) free(p->fl[(p->fl_head + i) & (p->fl_cap - 1)].frame);
            free(p->fl);
            if (p->kind == PORT_WIRE && p->fd >= 0) close(p->fd);
            if (p->pcap_in) fclose(p->pcap_in);
            if (p->pcap_out) fclose(p->pcap_out);
            free(p->txbuf);
            free(p);
        }
        free(s->scratch), free(s->out), free(s->deq_lag), free(s->tx_lag), free(s->groups), free(s->replica);
        for (repl_t *r = s->repls, *nx; r; r = nx) nx = r->next, free(r);
        free(s->sessions), free(s);
    }
    free(e->sw), free(e->heap), free(e->delivered), free(e->host_pause_frames), free(e->host_paused);
    free(e->kept), free(e->cpu_frames);
    if (e->epfd >= 0) close(e->epfd);
    if (e->evfd >= 0) close(e->evfd);
    if (e->notify_fd >= 0) close(e->notify_fd);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

/* a switch with `nprio` priority queues and no program yet (it drops what arrives); its index or -1 */
int eng_add_switch(void *ep, uint32_t drop_port, uint32_t nprio) {
    engine *e = ep;
    if (nprio < 1 || nprio > MAX_PRIO) return -1;
    if (e->nsw == e->capsw) {
        uint32_t cap = e->capsw ? e->capsw * 2 : 16;
        sw_t **a = realloc(e->sw, cap * sizeof *a);
        if (!a) return -1;
        e->sw = a, e->capsw = cap;
    }
    sw_t *s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->drop_port = drop_port, s->nprio = nprio;
    s->d_limit = 64;
    s->pfc_priority = -1;
    s->rng = e->seed * UINT64_C(1000003) + e->nsw + 1;
    s->index = e->nsw;
    e->sw[e->nsw] = s;
    return (int)e->nsw++;
}

/* switch `swi` runs a native program instance from now on (packets queued under the previous one
 * finish their egress with it: the caller keeps it alive); 0, or -1 */
int eng_set_pipeline(void *ep, uint32_t swi, void *inst, void *ingress, void *egress, void *priority,
                     uint32_t state_size, uint32_t max_hdr, uint32_t drop_port) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    if (!ingress) {   /* no program: drop what arrives */
        s->ingress = 0;
        return 0;
    }
    if (max_hdr < s->max_hdr) max_hdr = s->max_hdr;   /* packets queued under the previous program */
    uint8_t *scratch = calloc(1, state_size + 16), *out = malloc(max_hdr + MAX_FRAME + 64);
    if (!scratch || !out) {
        free(scratch), free(out);
        return -1;
    }
    free(s->scratch), free(s->out);
    s->scratch = scratch, s->out = out;
    s->inst = inst, s->ingress = (ingress_fn)ingress, s->egress = (egress_fn)egress;
    s->mcast_grp = 0;   /* until eng_set_copies says the new program makes copies */
    s->repl = 0;        /* and eng_set_replication that it clones, resubmits or recirculates */
    s->digest = 0;      /* and eng_set_digests that it sends digests */
    s->priority = (priority_fn)priority;
    s->state_size = state_size, s->max_hdr = max_hdr, s->drop_port = drop_port;
    return 0;
}

/* switch `swi`'s program makes multicast copies (mcast_grp: its tb_mcast_grp, set_rid / set_type: its
 * tb_set_egress_rid / tb_set_instance_type), or none (all 0); call after eng_set_pipeline. 0, or -1 */
int eng_set_copies(void *ep, uint32_t swi, void *mcast_grp, void *set_rid, void *set_type) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    if (!mcast_grp) {
        s->mcast_grp = 0;
        return 0;
    }
    if (!set_rid || !set_type || !s->state_size) return -1;
    uint8_t *replica = calloc(1, s->state_size + 16);
    if (!replica) return -1;
    free(s->replica);
    s->replica = replica;
    s->mcast_grp = (priority_fn)mcast_grp, s->set_rid = (set_fn)set_rid, s->set_type = (set_fn)set_type;
    return 0;
}

/* switch `swi`'s multicast groups, all at once: n (group, rid, port) triples, each group's copies in
 * replication order (runtime/pre.py group()). 0, or -1 */
int eng_set_groups(void *ep, uint32_t swi, uint32_t n, const uint32_t *triples) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    uint32_t *copy = n ? malloc((size_t)n * 3 * sizeof *copy) : 0;
    if (n && !copy) return -1;
    if (n) memcpy(copy, triples, (size_t)n * 3 * sizeof *copy);
    free(s->groups);
    s->groups = copy, s->ngroups = n;
    return 0;
}

/* switch `swi`'s program sends digests: digest is its tb_digest, words its tb_digest_words(); call
 * after eng_set_pipeline and before eng_set_replication. 0, or -1 */
int eng_set_digests(void *ep, uint32_t swi, void *digest, uint32_t words) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    s->digest = (digest_fn)digest, s->digest_words = words;
    return 0;
}

/* switch `swi`'s program clones, resubmits or recirculates: fns are its tb_requests, tb_state_copy,
 * tb_clone_i2e, tb_clone_e2e, tb_ingress_again, tb_egress_ctl_only, tb_deparse, tb_set_egress_rid,
 * tb_set_instance_type and tb_truncate (program.py), passes the bound on resubmit/recirculation
 * passes; call after eng_set_pipeline (eng_set_sessions gives the clone sessions, eng_set_groups the
 * multicast groups). 0, or -1 */
int eng_set_replication(void *ep, uint32_t swi, void *const fns[10], uint32_t max_passes) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    if (!s->ingress || !s->state_size) return -1;
    for (int i = 0; i < 10; i++)
        if (!fns[i]) return -1;
    repl_t *r = calloc(1, sizeof *r);
    if (!r) return -1;
    r->inst = s->inst;
    r->requests = (requests_fn)fns[0], r->copy = (copy_fn)fns[1], r->clone_i2e = (clone_i2e_fn)fns[2];
    r->clone_e2e = (clone_e2e_fn)fns[3], r->again = (again_fn)fns[4], r->egress_ctl = (egress_ctl_fn)fns[5];
    r->deparse = (deparse_fn)fns[6], r->set_rid = (set_fn)fns[7], r->set_type = (set_fn)fns[8];
    r->truncate = (priority_fn)fns[9];
    r->digest = s->digest, r->digest_words = s->digest_words;
    r->state_size = s->state_size, r->max_passes = max_passes;
    r->next = s->repls;
    s->repls = r;
    s->repl = r;
    return 0;
}

/* switch `swi`'s clone sessions, all at once: n (session, instance, port, packet_length_bytes) rows,
 * each session's copies in replication order (runtime/pre.py clone_session()). 0, or -1 */
int eng_set_sessions(void *ep, uint32_t swi, uint32_t n, const uint32_t *rows) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    uint32_t *copy = n ? malloc((size_t)n * 4 * sizeof *copy) : 0;
    if (n && !copy) return -1;
    if (n) memcpy(copy, rows, (size_t)n * 4 * sizeof *copy);
    free(s->sessions);
    s->sessions = copy, s->nsessions = n;
    return 0;
}

/* the defaults of ports made later: queue limit, byte limit, pps interval, link rate and delay, loss */
int eng_defaults(void *ep, uint32_t swi, uint32_t limit, uint64_t byte_limit, int64_t interval_ns, int64_t rate_bps,
                 int64_t delay_ns, double loss) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    s->d_limit = limit, s->d_byte_limit = byte_limit, s->d_interval_ns = interval_ns;
    s->d_rate_bps = rate_bps, s->d_delay_ns = delay_ns, s->d_loss = loss;
    return 0;
}

int eng_port(void *ep, uint32_t swi, uint32_t number, int64_t rate_bps, int64_t delay_ns, double loss) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    port *p = get_port(e->sw[swi], number);
    if (!p) return -1;
    p->rate_bps = rate_bps, p->delay_ns = delay_ns, p->loss = loss;
    return 0;
}

int eng_queue(void *ep, uint32_t swi, uint32_t number, uint32_t prio, uint32_t limit, uint64_t byte_limit,
              int64_t interval_ns) {
    engine *e = ep;
    if (swi >= e->nsw || prio >= MAX_PRIO) return -1;
    port *p = get_port(e->sw[swi], number);
    if (!p) return -1;
    p->q[prio].limit = limit, p->q[prio].byte_limit = byte_limit, p->q[prio].interval_ns = interval_ns;
    return 0;
}

/* tm/model.py set_queue_weight: queue `prio` of a port (number < 0: the default of ports made later)
 * is served by DRR with `weight` bytes per turn, 0 = strict priority */
int eng_queue_weight(void *ep, uint32_t swi, int number, uint32_t prio, uint32_t weight) {
    engine *e = ep;
    if (swi >= e->nsw || prio >= MAX_PRIO) return -1;
    sw_t *s = e->sw[swi];
    if (number < 0) {
        s->d_weight = weight;
        return 0;
    }
    port *p = get_port(s, (uint32_t)number);
    if (!p) return -1;
    p->q[prio].weight = weight;
    p->weighted = 0;
    for (uint32_t i = 0; i < s->nprio; i++) p->weighted |= p->q[i].weight != 0;
    return 0;
}

int eng_pfc(void *ep, uint32_t swi, int priority, uint32_t xoff, uint32_t xon, uint32_t pool) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    int same = s->pfc_priority == (xoff ? priority : -1) && s->pfc_xoff == xoff && s->pfc_xon == xon &&
               s->pfc_pool == pool;
    if (same) return 0;   /* a copy of the TM's settings after another change (sync_tm) */
    if (s->pfc_queued) return -2;
    s->pfc_priority = xoff ? priority : -1;
    s->pfc_xoff = xoff, s->pfc_xon = xon, s->pfc_pool = pool;
    return 0;
}

int eng_cable(void *ep, uint32_t a, uint32_t a_port, uint32_t b, uint32_t b_port) {
    engine *e = ep;
    if (a >= e->nsw || b >= e->nsw) return -1;
    port *pa = get_port(e->sw[a], a_port), *pb = get_port(e->sw[b], b_port);
    if (!pa || !pb) return -1;
    pa->kind = pb->kind = PORT_CABLE;
    pa->peer_sw = (int)b, pa->peer_port = (int)b_port;
    pb->peer_sw = (int)a, pb->peer_port = (int)a_port;
    return 0;
}

int eng_host_port(void *ep, uint32_t swi, uint32_t number, uint32_t host) {
    engine *e = ep;
    if (swi >= e->nsw || host >= e->nhost) return -1;
    port *p = get_port(e->sw[swi], number);
    if (!p) return -1;
    p->kind = PORT_HOST, p->host = (int)host;
    return 0;
}

/* the link of port `number` of switch `swi` goes down (down = 1) or comes back (0); going down, the
 * frames on their way into the port are lost (see the header); 0, or -1 */
int eng_port_down(void *ep, uint32_t swi, uint32_t number, int down) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    port *p = get_port(e->sw[swi], number);
    if (!p) return -1;
    if (down && !p->down) {
        for (uint64_t i = 0; i < e->nheap; i++) {   /* the port bit is no part of the heap's order */
            event *ev = &e->heap[i];
            if (ev->kind == EV_ARRIVAL && ev->sw == swi && (ev->port & ~FLIGHT_PORT) == number) ev->port |= CUT_PORT;
        }
        for (uint32_t i = 0; i < p->fl_n; i++) p->fl[(p->fl_head + i) & (p->fl_cap - 1)].cut = 1;
    }
    p->down = down != 0;
    return 0;
}

/* switch `swi` loses what a process holds (its process ended, or starts again): every queued packet,
 * its PFC state, its counters and its ports' and queues'; returns the packets it had queued, or -1 */
int64_t eng_switch_clear(void *ep, uint32_t swi) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    sw_t *s = e->sw[swi];
    int64_t flushed = 0;
    for (uint32_t n = 0; n < NPORT; n++) {
        port *p = s->ports[n];
        if (!p) continue;
        for (uint32_t i = 0; i < MAX_PRIO; i++) {
            queue *q = &p->q[i];
            for (pkt *k = q->head, *nx; k; k = nx) nx = k->next, free(k), flushed++;
            q->head = q->tail = 0;
            q->depth = 0, q->bytes = 0, q->max_depth = 0;
            q->enqueued = q->dequeued = q->dropped_full = q->enq_bytes = q->deq_bytes = q->drop_bytes = 0;
            q->passed = q->passed_bytes = 0;
            memset(q->class_packets, 0, sizeof q->class_packets);
            memset(q->class_bytes, 0, sizeof q->class_bytes);
            memset(q->class_drops, 0, sizeof q->class_drops);
        }
        p->busy = 0;
        p->rx = p->tx = p->dropped_priority = p->dropped_priority_bytes = 0;
        p->pauses_received = p->resumes_received = 0;
        p->paused_ns = 0;
        if (p->paused_since >= 0) p->paused_since = e->now;
        p->cut_lost = 0, p->peak = 0;
        memset(p->lost_by_class, 0, sizeof p->lost_by_class);
    }
    s->pfc_queued = 0;
    memset(s->pfc_held, 0, sizeof s->pfc_held);
    memset(s->pfc_off, 0, sizeof s->pfc_off);
    memset(s->pfc_sent, 0, sizeof s->pfc_sent);
    memset(s->stats, 0, sizeof s->stats);
    return flushed;
}

/* a frame reaches port `number` of switch `swi` at `at_ns` (a host puts it on its link) */
int eng_inject(void *ep, uint32_t swi, uint32_t number, const uint8_t *frame, uint32_t len, int64_t at_ns) {
    engine *e = ep;
    if (swi >= e->nsw || number > MAX_PORT) return -1;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) return -1;
    memcpy(copy, frame, len);
    return push(e, at_ns, EV_ARRIVAL, swi, number, copy, len);
}

/* `count` frames in one call, as eng_inject each in turn: records of at_ns (int64), switch, port and
 * length (uint32 each), then the frame padded to 8 bytes (program_host.py's Outbox). Returns 0, or
 * the number (from 1) of the first record refused; the ones before it are in. */
int eng_inject_many(void *ep, const uint8_t *buf, uint64_t nbytes, uint64_t count) {
    uint64_t off = 0;
    for (uint64_t i = 0; i < count; i++) {
        int64_t at;
        uint32_t head[3];
        if (off + 20 > nbytes) return (int)(i + 1);
        memcpy(&at, buf + off, 8);
        memcpy(head, buf + off + 8, 12);
        if (off + 24 + head[2] > nbytes || eng_inject(ep, head[0], head[1], buf + off + 24, head[2], at) != 0)
            return (int)(i + 1);
        off += 24 + (((uint64_t)head[2] + 7) & ~(uint64_t)7);
    }
    return 0;
}

/* every event with time <= until, in order (the caller holds the lock); in real time e->now is the
 * clock's reading, set by the caller, and events keep their model times */
static void process_until(engine *e, int64_t until) {
    while (e->nheap && e->heap[0].t <= until) {
        event ev = pop(e);
        e->events++;
        if (!e->rt && ev.t > e->now) e->now = ev.t;
        if (ev.kind == EV_ARRIVAL) {
            uint32_t number = ev.port & PORT_BITS;
            if (ev.port & FLIGHT_PORT) next_flight(e, ev.sw, number);
            if (ev.port & CUT_PORT) {
                port *cut = e->sw[ev.sw]->ports[number];
                cut->cut_lost++;
                cut->cut_lost_by_class[cell_class(ev.frame, ev.len, e->cell_port)]++;
            } else
                arrive(e, ev.sw, number, ev.frame, ev.len, ev.t);
            free(ev.frame);
        } else if (ev.kind == EV_TRANSMIT) {
            wire_release(e, ev.sw, ev.port, e->rt ? e->now : ev.t);
        } else {
            sw_t *s = e->sw[ev.sw];
            port *p = s->ports[ev.port];
            if (!p) continue;
            if (p->armed_ns == ev.t) p->armed_ns = -1;
            if (!p->busy || p->next_ns > ev.t) {  /* stale: re-arm at the real time */
                arm(e, ev.sw, ev.port, p);
                continue;
            }
            run_port(e, s, ev.port, p, ev.t);
            arm(e, ev.sw, ev.port, p);
        }
    }
}

/* every event with time <= until_ns, in order (model time); returns the next event's time or -1 */
int64_t eng_run(void *ep, int64_t until_ns) {
    engine *e = ep;
    pthread_mutex_lock(&e->lock);
    process_until(e, until_ns);
    int64_t nxt = e->nheap ? e->heap[0].t : -1;
    pthread_mutex_unlock(&e->lock);
    return nxt;
}

/* Every event up to until_ns, in order, as eng_run; but once a host delivery at time t is kept,
 * only the events before t + window_ns.  A driver whose hosts answer a delivery at t with frames
 * that reach the fabric no earlier than t + window_ns (the host link's delay and one frame's
 * serialisation) can hand the batch to its hosts and inject their answers without ever putting a
 * frame before the engine's clock.  Returns the last time processed (every event at or before it
 * has run); the kept deliveries (eng_kept) may lie beyond it. */
int64_t eng_run_window(void *ep, int64_t until_ns, int64_t window_ns) {
    engine *e = ep;
    pthread_mutex_lock(&e->lock);
    e->window_ns = window_ns, e->horizon = until_ns;
    if (window_ns > 0 && e->nkept) {   /* deliveries not yet taken bound this call too */
        uint64_t off = 0;
        while (off < e->nkept) {
            int64_t at;
            uint32_t n;
            memcpy(&at, e->kept + off, 8);
            memcpy(&n, e->kept + off + 12, 4);
            if (at + window_ns - 1 < e->horizon) e->horizon = at + window_ns - 1;
            off += 16 + ((n + 7) & ~7u);
        }
    }
    while (e->nheap && e->heap[0].t <= e->horizon) process_until(e, e->heap[0].t);
    int64_t reached = e->horizon;
    e->window_ns = 0;
    pthread_mutex_unlock(&e->lock);
    return reached;
}

/* Frames of cell class `cls` inside the engine now: out[0] on cables (arrivals still to happen,
 * host injections included), out[1] queued in a traffic manager, out[2] on a cable cut under them
 * (lost when they arrive); out[3] those already lost on cut cables (every port's cut_lost of the
 * class).  A driver's conservation count (what hosts sent = what hosts got + what was lost + what
 * is still inside) reads it at the end. */
int eng_in_flight(void *ep, uint32_t cls, uint64_t out[4]) {
    engine *e = ep;
    pthread_mutex_lock(&e->lock);
    uint64_t cables = 0, queued = 0, doomed = 0, cut = 0;
    for (uint64_t i = 0; i < e->nheap; i++) {
        const event *ev = &e->heap[i];
        if (ev->kind == EV_ARRIVAL && ev->frame && cell_class(ev->frame, ev->len, e->cell_port) == (int)cls) {
            if (ev->port & CUT_PORT) doomed++;   /* on a cable that was cut under it: lost on arrival */
            else cables++;
        }
    }
    for (uint32_t si = 0; si < e->nsw; si++) {
        sw_t *s = e->sw[si];
        for (uint32_t number = 0; number < NPORT; number++) {
            port *p = s->ports[number];
            if (!p) continue;
            cut += p->cut_lost_by_class[cls < CLASSES ? cls : OTHER];
            for (uint32_t i = 0; i < p->fl_n; i++) {
                const flight *f = &p->fl[(p->fl_head + i) & (p->fl_cap - 1)];
                if (cell_class(f->frame, f->len, e->cell_port) == (int)cls) {
                    if (f->cut) doomed++;
                    else cables++;
                }
            }
            for (uint32_t prio = 0; prio < MAX_PRIO; prio++)
                for (const pkt *k = p->q[prio].head; k; k = k->next)
                    if (cell_class(k->data, k->data_len, e->cell_port) == (int)cls) queued++;
        }
    }
    out[0] = cables, out[1] = queued, out[2] = doomed, out[3] = cut;
    pthread_mutex_unlock(&e->lock);
    return 0;
}

/* ---- real time ------------------------------------------------------------ */

/* A wire port: an AF_PACKET socket on `iface` (switch/ports.py's settings: every frame of the
 * interface, none the engine sent itself, promiscuous, 4 MiB buffers, non-blocking).  Returns its
 * fd, or -errno. */
int eng_wire_port(void *ep, uint32_t swi, uint32_t number, const char *iface) {
    engine *e = ep;
    if (swi >= e->nsw) return -EINVAL;
    port *p = get_port(e->sw[swi], number);
    if (!p) return -EINVAL;
    unsigned idx = if_nametoindex(iface);
    if (!idx) return -ENODEV;
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1, buf = 4 << 20;
    if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING_OPT, &one, sizeof one) != 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
    struct packet_mreq mr = {0};
    mr.mr_ifindex = (int)idx;
    mr.mr_type = PACKET_MR_PROMISC;
    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr);
    struct sockaddr_ll sll = {0};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = (int)idx;
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    p->kind = PORT_WIRE;
    p->fd = fd;
    return fd;
}

/* port `number` of switch `swi` writes every frame it receives and sends to these pcap files
 * (switch/pcap.py's names and format); 0, or -errno */
int eng_pcap(void *ep, uint32_t swi, uint32_t number, const char *in_path, const char *out_path) {
    engine *e = ep;
    if (swi >= e->nsw) return -EINVAL;
    port *p = get_port(e->sw[swi], number);
    if (!p) return -EINVAL;
    p->pcap_in = pcap_open(in_path);
    p->pcap_out = p->pcap_in ? pcap_open(out_path) : 0;
    return p->pcap_out ? 0 : -errno;
}

/* every pcap file's buffer to disk (the caller holds the lock or the engine is stopped) */
void eng_pcap_flush(void *ep) {
    engine *e = ep;
    for (uint32_t i = 0; i < e->nsw; i++)
        for (uint32_t n = 0; n < NPORT; n++) {
            port *p = e->sw[i]->ports[n];
            if (p && p->pcap_in) fflush(p->pcap_in), fflush(p->pcap_out);
        }
}

/* frames the program sends to `number` (the CPU port) are kept for the control side */
int eng_cpu_port(void *ep, uint32_t swi, uint32_t number) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    port *p = get_port(e->sw[swi], number);
    if (!p) return -1;
    p->kind = PORT_CPU;
    return 0;
}

/* an eventfd the engine writes when it has frames for the CPU port (made once) */
int eng_notify_fd(void *ep) {
    engine *e = ep;
    if (e->notify_fd < 0) e->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return e->notify_fd;
}

/* the CPU port's frames since the last call: records (uint32 switch, uint32 len, frame padded to 8),
 * copied into buf (at most cap bytes, whole records); returns the bytes copied (caller holds the lock) */
uint64_t eng_take_cpu(void *ep, uint8_t *buf, uint64_t cap) {
    engine *e = ep;
    uint64_t off = 0;
    while (off < e->ncpu) {
        uint32_t n;
        memcpy(&n, e->cpu_frames + off + 4, 4);
        uint64_t rec = 8 + ((n + 7) & ~7u);
        if (off + rec > cap) break;
        off += rec;
    }
    memcpy(buf, e->cpu_frames, off);
    memmove(e->cpu_frames, e->cpu_frames + off, e->ncpu - off);
    e->ncpu -= off;
    return off;
}

/* a frame from the control side (PacketOut) enters switch `swi` on `number` now (caller holds the lock) */
int eng_inject_now(void *ep, uint32_t swi, uint32_t number, const uint8_t *frame, uint32_t len) {
    engine *e = ep;
    int64_t now = e->rt ? mono_ns() - e->epoch_ns : e->now;
    int rc = eng_inject(ep, swi, number, frame, len, now);
    if (rc == 0 && e->evfd >= 0) {
        uint64_t one = 1;
        (void)!write(e->evfd, &one, 8);
    }
    return rc;
}

/* the lag measures of switch `swi`: which 0 dequeue, 1 transmit; out = recorded, on_time, total_ns,
 * max_ns, then FINE_US fine and 64 coarse bucket counts */
int eng_lag(void *ep, uint32_t swi, int which, uint64_t *out) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    lag_t *l = which ? e->sw[swi]->tx_lag : e->sw[swi]->deq_lag;
    if (!l) return 0;
    out[0] = l->recorded, out[1] = l->on_time, out[2] = l->total_ns, out[3] = l->max_ns;
    for (uint32_t i = 0; i < FINE_US; i++) out[4 + i] = l->fine[i];
    for (uint32_t i = 0; i < 64; i++) out[4 + FINE_US + i] = l->coarse[i];
    return 4 + FINE_US + 64;
}

/* one wire port's socket counters: rx frames, rx truncated, tx frames, tx errors */
int eng_wire_stats(void *ep, uint32_t swi, uint32_t number, uint64_t *out) {
    engine *e = ep;
    if (swi >= e->nsw || number >= NPORT || !e->sw[swi]->ports[number]) return -1;
    port *p = e->sw[swi]->ports[number];
    out[0] = p->rx_frames, out[1] = p->rx_truncated, out[2] = p->tx_frames, out[3] = p->tx_errors;
    return 4;
}

/* the real-time loop's thread CPU time (ns) while it runs, else what it last was */
static uint64_t loop_cpu_ns(engine *e) {
    struct timespec cpu;
    if (e->loop_clock_set && clock_gettime(e->loop_clock, &cpu) == 0)
        return (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    return e->thread_cpu_ns;
}

/* Run in real time until eng_stop: one thread owns every packet.
 *   wait(epoll_pwait2: every wire port and the wake-up eventfd, timing out at the heap's earliest
 *        event, to the nanosecond)
 *   then, holding the lock: every event due by now; each readable port drained (up to RX_BATCH
 *   frames a turn, recvmmsg), each frame arriving at its own clock reading.
 * `epoch_ns`: CLOCK_MONOTONIC's reading at the switch clock's zero (its metadata timestamps).
 * Returns 0 when stopped, -errno when it could not start. */
int eng_run_realtime(void *ep, int64_t epoch_ns) {
    engine *e = ep;
    prctl(PR_SET_NAME, "tb-engine", 0, 0, 0);   /* emulation/realtime.py raises this thread */
    e->epoch_ns = epoch_ns;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (e->evfd < 0) e->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->epfd < 0 || e->evfd < 0) return -errno;
    struct epoll_event ev = {0};
    ev.events = EPOLLIN;
    ev.data.u64 = UINT64_MAX;
    epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->evfd, &ev);
    for (uint32_t i = 0; i < e->nsw; i++) {
        sw_t *s = e->sw[i];
        if (!s->deq_lag) s->deq_lag = calloc(1, sizeof(lag_t));
        if (!s->tx_lag) s->tx_lag = calloc(1, sizeof(lag_t));
        for (uint32_t n = 0; n < NPORT; n++) {
            port *p = s->ports[n];
            if (!p || p->kind != PORT_WIRE) continue;
            ev.data.u64 = ((uint64_t)i << 16) | n;
            epoll_ctl(e->epfd, EPOLL_CTL_ADD, p->fd, &ev);
        }
    }
    uint8_t (*bufs)[MAX_FRAME] = malloc(sizeof(uint8_t[RX_BATCH][MAX_FRAME]));
    if (!bufs) return -ENOMEM;
    struct mmsghdr msgs[RX_BATCH];
    struct iovec iov[RX_BATCH];
    for (int i = 0; i < RX_BATCH; i++) {
        iov[i].iov_base = bufs[i], iov[i].iov_len = MAX_FRAME;
        memset(&msgs[i], 0, sizeof msgs[i]);
        msgs[i].msg_hdr.msg_iov = &iov[i], msgs[i].msg_hdr.msg_iovlen = 1;
    }
    struct epoll_event ready[64];
    /* the loop's CPU time is read from its thread's clock when eng_totals asks (any thread may), not
     * at every wake-up: a CPU-clock read is a system call */
    e->loop_clock_set = pthread_getcpuclockid(pthread_self(), &e->loop_clock) == 0;
    e->rt = 1;
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        e->now = mono_ns() - e->epoch_ns;
        process_until(e, e->now);
        wire_flush(e);
        int64_t next = e->nheap ? e->heap[0].t : -1;
        pthread_mutex_unlock(&e->lock);
        /* sleep until a port is readable, a wake-up, or the earliest event (ns timeout: no timer
         * descriptor to set and read per event) */
        struct timespec wait, *timeout = 0;
        if (next >= 0) {
            int64_t in = next + e->slack_ns - (mono_ns() - e->epoch_ns);
            if (in < 0) in = 0;
            wait.tv_sec = in / 1000000000, wait.tv_nsec = in % 1000000000;
            timeout = &wait;
        }
        int n = epoll_pwait2(e->epfd, ready, 64, timeout, 0);
        pthread_mutex_lock(&e->lock);
        e->wakeups++;
        if (n < 0) continue;   /* EINTR */
        for (int k = 0; k < n && !e->stop; k++) {
            uint64_t tag = ready[k].data.u64;
            if (tag == UINT64_MAX) {
                uint64_t v;
                (void)!read(e->evfd, &v, 8);
                continue;
            }
            uint32_t swi = (uint32_t)(tag >> 16), number = (uint32_t)(tag & 0xFFFF);
            port *p = e->sw[swi]->ports[number];
            int got = recvmmsg(p->fd, msgs, RX_BATCH, MSG_DONTWAIT, 0);
            if (got <= 0) continue;
            e->now = mono_ns() - e->epoch_ns;
            process_until(e, e->now);
            for (int i = 0; i < got; i++) {
                uint32_t len = msgs[i].msg_len;
                p->rx_frames++;
                if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
                    p->rx_truncated++;
                    continue;
                }
                e->now = mono_ns() - e->epoch_ns;
                arrive(e, swi, number, bufs[i], len, e->now);
            }
        }
    }
    e->rt = 0;
    e->thread_cpu_ns = loop_cpu_ns(e);
    e->loop_clock_set = 0;   /* the thread ends: its clock with it */
    pthread_mutex_unlock(&e->lock);
    free(bufs);
    return 0;
}

/* Timer slack: the loop sleeps until the earliest event plus `ns`, so events that close share one
 * wake-up.  Model times are kept (a late event still happens at its own time in the model); the
 * lateness shows in the dequeue and transmit lags like any other. */
void eng_set_slack(void *ep, int64_t ns) { ((engine *)ep)->slack_ns = ns < 0 ? 0 : ns; }

/* ask eng_run_realtime to return (safe from any thread) */
void eng_stop(void *ep) {
    engine *e = ep;
    e->stop = 1;
    if (e->evfd >= 0) {
        uint64_t one = 1;
        (void)!write(e->evfd, &one, 8);
    }
}

/* the wake-up eventfd made before the loop runs, so eng_stop works before it starts */
int eng_prepare_realtime(void *ep) {
    engine *e = ep;
    if (e->evfd < 0) e->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return e->evfd;
}

int64_t eng_next(void *ep) {
    engine *e = ep;
    return e->nheap ? e->heap[0].t : -1;
}

void eng_lock(void *ep) { pthread_mutex_lock(&((engine *)ep)->lock); }
void eng_unlock(void *ep) { pthread_mutex_unlock(&((engine *)ep)->lock); }

void eng_keep(void *ep, int on) { ((engine *)ep)->keep = on; }

/* the kept host deliveries: records (int64 t, uint32 host, uint32 len, frame padded to 8) */
uint64_t eng_kept(void *ep, const uint8_t **records) {
    engine *e = ep;
    *records = e->kept;
    return e->nkept;
}

void eng_clear_kept(void *ep) { ((engine *)ep)->nkept = 0; }

uint64_t eng_delivered(void *ep, uint32_t host) {
    engine *e = ep;
    return host < e->nhost ? e->delivered[host] : 0;
}

int eng_host_pause(void *ep, uint32_t host, uint64_t *frames) {
    engine *e = ep;
    if (host >= e->nhost) return -1;
    *frames = e->host_pause_frames[host];
    return e->host_paused[host];
}

/* engine totals: events, cell-hops (packets the TMs took: queued or passed), wake-ups of the real-time
 * loop and its thread's CPU time (ns) */
void eng_totals(void *ep, uint64_t out[4]) {
    engine *e = ep;
    out[0] = e->events, out[1] = e->cell_hops, out[2] = e->wakeups, out[3] = loop_cpu_ns(e);
}

/* a switch's counters (S_NSTATS values, in the enum's order) */
int eng_switch_stats(void *ep, uint32_t swi, uint64_t *out) {
    engine *e = ep;
    if (swi >= e->nsw) return -1;
    memcpy(out, e->sw[swi]->stats, S_NSTATS * sizeof(uint64_t));
    return S_NSTATS;
}

/* one queue: depth, bytes, limit, byte_limit, max_depth, enqueued, dequeued, dropped_full, enq_bytes,
 * deq_bytes, drop_bytes, passed, passed_bytes, then class_packets[16], class_bytes[16], class_drops[16] */
int eng_queue_stats(void *ep, uint32_t swi, uint32_t number, uint32_t prio, uint64_t *out) {
    engine *e = ep;
    if (swi >= e->nsw || number >= NPORT || prio >= MAX_PRIO) return -1;
    port *p = e->sw[swi]->ports[number];
    if (!p) return 0;
    queue *q = &p->q[prio];
    uint64_t head[13] = {q->depth, q->bytes, q->limit, q->byte_limit, q->max_depth, q->enqueued, q->dequeued,
                         q->dropped_full, q->enq_bytes, q->deq_bytes, q->drop_bytes, q->passed, q->passed_bytes};
    memcpy(out, head, sizeof head);
    memcpy(out + 13, q->class_packets, sizeof q->class_packets);
    memcpy(out + 13 + CLASSES, q->class_bytes, sizeof q->class_bytes);
    memcpy(out + 13 + 2 * CLASSES, q->class_drops, sizeof q->class_drops);
    return 13 + 3 * CLASSES;
}

/* one port: rx, tx, dropped_priority, dropped_priority_bytes, pauses_received, resumes_received, paused_ns,
 * paused, pfc xoff sent, pfc xon sent (as a source), cut_lost, down, then lost_by_class[16] */
int eng_port_stats(void *ep, uint32_t swi, uint32_t number, uint64_t *out) {
    engine *e = ep;
    if (swi >= e->nsw || number >= NPORT) return -1;
    sw_t *s = e->sw[swi];
    port *p = s->ports[number];
    if (!p) return 0;
    uint64_t head[12] = {p->rx, p->tx, p->dropped_priority, p->dropped_priority_bytes, p->pauses_received,
                         p->resumes_received, (uint64_t)p->paused_ns, (uint64_t)p->paused,
                         s->pfc_sent[number][0], s->pfc_sent[number][1], p->cut_lost, (uint64_t)p->down};
    memcpy(out, head, sizeof head);
    memcpy(out + 12, p->lost_by_class, sizeof p->lost_by_class);
    return 12 + CLASSES;
}

/* Telemetry in bulk: one record of SAMPLE_WORDS values per port of every switch, in switch then port
 * order: switch, port, peak (the deepest queue in packets since the previous call; it restarts from what
 * is queued now), queue_full (packets refused by full queues), lost (lost on the link or to a priority
 * the port lacks), rx, tx, then packets[16] and bytes[16] accepted for transmission per cell class.
 * Returns the number of records, or -(records needed) when `cap` records do not fit (nothing reset).
 * The caller holds the engine's lock in real time. */
#define SAMPLE_WORDS (7 + 2 * CLASSES)
int eng_sample(void *ep, uint64_t *out, uint32_t cap) {
    engine *e = ep;
    uint32_t need = 0;
    for (uint32_t i = 0; i < e->nsw; i++)
        for (uint32_t n = 0; n < NPORT; n++)
            if (e->sw[i]->ports[n]) need++;
    if (need > cap) return -(int)need;
    uint64_t *r = out;
    for (uint32_t i = 0; i < e->nsw; i++) {
        sw_t *s = e->sw[i];
        for (uint32_t n = 0; n < NPORT; n++) {
            port *p = s->ports[n];
            if (!p) continue;
            uint64_t full = 0, lost = p->dropped_priority, depth = 0;
            memset(r + 7, 0, 2 * CLASSES * sizeof(uint64_t));
            for (uint32_t c = 0; c < CLASSES; c++) lost += p->lost_by_class[c];
            for (uint32_t k = 0; k < MAX_PRIO; k++) {
                queue *q = &p->q[k];
                full += q->dropped_full;
                if (q->depth > depth) depth = q->depth;
                for (uint32_t c = 0; c < CLASSES; c++) {
                    r[7 + c] += q->class_packets[c];
                    r[7 + CLASSES + c] += q->class_bytes[c];
                }
            }
            r[0] = i, r[1] = n, r[2] = p->peak, r[3] = full, r[4] = lost, r[5] = p->rx, r[6] = p->tx;
            p->peak = (uint32_t)depth;
            r += SAMPLE_WORDS;
        }
    }
    return (int)need;
}

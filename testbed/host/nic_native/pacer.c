/* The NIC's pacing engine: a thread that sends each datagram at its release time.
 *
 * Model: the agent hands over (socket, destination, TOS, payload, release time); the
 * release time is when the datagram's last bit reaches the ToR (its wire start plus
 * serialisation plus the link's propagation delay, computed by the agent).  The
 * thread keeps a min-heap ordered by (release time, hand-over order) and sleeps on a
 * timerfd armed for the earliest release (CLOCK_REALTIME, the agent's clock, absolute):
 * the thread that hands a datagram over re-arms it only when the datagram is due before
 * the time it is armed for, so the pacing thread wakes once per release, never to be told
 * of new work (when the queue runs empty the timer, already expired, is left as it is).
 * Datagrams are handed over one at a time (nic_submit) or as a batch of records in one call
 * (nic_submit_many: the agent hands over what one wake-up of its loop released).
 * It sends every datagram that is due with sendmmsg, one call per run of datagrams
 * of the same socket, each with its TOS byte as IP_TOS ancillary data.  For every
 * datagram it records how late it left (send time minus release time, nanoseconds).
 * A datagram the kernel refuses (buffer full, peer unreachable) is counted, like a
 * loss on the wire.  Datagrams still queued when the NIC closes are dropped.
 *
 * nic_recv reads up to `max` datagrams at once with recvmmsg, each with its source
 * address, TOS byte and kernel receive time (SO_TIMESTAMPNS).
 *
 * Lanes: one thread may pace the NICs of several hosts (a group of agents in one process,
 * testbed.host.group): each datagram carries its lane (the host's index), and each lane has its
 * own counters and lateness samples; a lane's queued datagrams can be dropped on their own when
 * its host stops (nic_drop_lane) while the thread goes on for the others.  A NIC opens with one
 * lane, 0; nic_lanes adds more before the thread starts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

typedef struct {
    int64_t due_ns;
    uint64_t seq;
    int fd;
    uint32_t addr; /* network order */
    uint16_t port; /* network order */
    int tos;
    uint32_t lane;
    size_t len;
    unsigned char *data;
} item;

typedef struct {
    uint64_t sent, errors, queued;
    uint64_t lost; /* handed over by nic_submit_many but not queued (out of memory) */
    int64_t *late_ns;
    size_t nlate, late_cap;
} lane;

typedef struct {
    pthread_mutex_t mu;
    pthread_t thread;
    int timer;        /* timerfd, CLOCK_REALTIME */
    int64_t armed_ns; /* the release it is armed for; INT64_MAX when disarmed */
    int running, stop;
    item *heap;
    size_t n, cap;
    uint64_t seq;
    lane *lanes;
    size_t nlanes;
} nic;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Arm the timer for `at` (absolute ns; 0 disarms). Called with the lock held. */
static void arm(nic *q, int64_t at) {
    struct itimerspec spec = {{0, 0}, {0, 0}};
    if (at > 0) {
        spec.it_value.tv_sec = at / 1000000000LL;
        spec.it_value.tv_nsec = at % 1000000000LL;
    }
    timerfd_settime(q->timer, TFD_TIMER_ABSTIME, &spec, NULL);
    q->armed_ns = at > 0 ? at : INT64_MAX;
}

static int before(const item *a, const item *b) {
    return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_push(nic *q, item it) {
    size_t i = q->n++;
    q->heap[i] = it;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&q->heap[i], &q->heap[p])) break;
        item t = q->heap[i]; q->heap[i] = q->heap[p]; q->heap[p] = t;
        i = p;
    }
}

static void sift_down(nic *q, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && before(&q->heap[l], &q->heap[m])) m = l;
        if (r < q->n && before(&q->heap[r], &q->heap[m])) m = r;
        if (m == i) break;
        item t = q->heap[i]; q->heap[i] = q->heap[m]; q->heap[m] = t;
        i = m;
    }
}

static item heap_pop(nic *q) {
    item top = q->heap[0];
    q->heap[0] = q->heap[--q->n];
    sift_down(q, 0);
    q->lanes[top.lane].queued--;
    return top;
}

static void record_late(lane *l, int64_t late) {
    if (l->nlate == l->late_cap) {
        size_t cap = l->late_cap ? 2 * l->late_cap : 4096;
        int64_t *grown = realloc(l->late_ns, cap * sizeof *grown);
        if (!grown) return;
        l->late_ns = grown;
        l->late_cap = cap;
    }
    l->late_ns[l->nlate++] = late;
}

/* Send items[0..k) (all due); called without the lock. Returns how many the kernel took. */
static void send_batch(nic *q, item *items, int k) {
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    struct sockaddr_in to[BATCH];
    union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } ctl[BATCH];
    int64_t late[BATCH];
    memset(msgs, 0, sizeof(msgs[0]) * k);
    for (int i = 0; i < k; i++) {
        memset(&to[i], 0, sizeof to[i]);
        to[i].sin_family = AF_INET;
        to[i].sin_addr.s_addr = items[i].addr;
        to[i].sin_port = items[i].port;
        iov[i].iov_base = items[i].data;
        iov[i].iov_len = items[i].len;
        msgs[i].msg_hdr.msg_name = &to[i];
        msgs[i].msg_hdr.msg_namelen = sizeof to[i];
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        memset(&ctl[i], 0, sizeof ctl[i]);
        msgs[i].msg_hdr.msg_control = ctl[i].buf;
        msgs[i].msg_hdr.msg_controllen = sizeof ctl[i].buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr);
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_TOS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &items[i].tos, sizeof(int));
    }
    int ok[BATCH];
    int i = 0;
    while (i < k) {
        int j = i + 1;
        while (j < k && items[j].fd == items[i].fd) j++;
        int64_t t = now_ns();
        for (int m = i; m < j; m++) late[m] = t - items[m].due_ns;
        int at = i;
        while (at < j) {
            int r = sendmmsg(items[i].fd, &msgs[at], (unsigned)(j - at), 0);
            if (r < 0) {
                if (errno == EINTR) continue;
                ok[at] = 0; /* this datagram is lost, as on a full wire; try the rest */
                at++;
            } else {
                for (int m = at; m < at + r; m++) ok[m] = 1;
                at += r;
            }
        }
        i = j;
    }
    pthread_mutex_lock(&q->mu);
    for (int m = 0; m < k; m++) {
        lane *l = &q->lanes[items[m].lane];
        if (ok[m]) l->sent++; else l->errors++;
        record_late(l, late[m]);
    }
    pthread_mutex_unlock(&q->mu);
    for (int m = 0; m < k; m++) free(items[m].data);
}

static void *run(void *arg) {
    nic *q = arg;
    item batch[BATCH];
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake at the release time, not up to 50 us after */
    for (;;) {
        uint64_t expirations;
        if (read(q->timer, &expirations, sizeof expirations) < 0 && errno != EINTR && errno != EAGAIN) break;
        pthread_mutex_lock(&q->mu);
        for (;;) {
            if (q->stop) {
                pthread_mutex_unlock(&q->mu);
                return NULL;
            }
            int64_t now = now_ns();
            int k = 0;
            while (k < BATCH && q->n > 0 && q->heap[0].due_ns <= now) batch[k++] = heap_pop(q);
            if (k == 0) break;
            pthread_mutex_unlock(&q->mu);
            send_batch(q, batch, k);
            pthread_mutex_lock(&q->mu);
        }
        if (q->n)
            arm(q, q->heap[0].due_ns);
        else
            q->armed_ns = INT64_MAX; /* it fired (or a hand-over re-armed it for a time now past): no call */
        pthread_mutex_unlock(&q->mu);
    }
    return NULL;
}

void *nic_open(void) {
    nic *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    pthread_mutex_init(&q->mu, NULL);
    q->timer = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC); /* the release times' clock */
    if (q->timer < 0) {
        pthread_mutex_destroy(&q->mu);
        free(q);
        return NULL;
    }
    q->armed_ns = INT64_MAX;
    q->lanes = calloc(1, sizeof *q->lanes);
    if (!q->lanes) {
        close(q->timer);
        pthread_mutex_destroy(&q->mu);
        free(q);
        return NULL;
    }
    q->nlanes = 1;
    return q;
}

/* Give the NIC `n` lanes (more than it has; before the thread starts): 0, or -1 (out of memory). */
int nic_lanes(void *h, size_t n) {
    nic *q = h;
    pthread_mutex_lock(&q->mu);
    int r = 0;
    if (n > q->nlanes) {
        lane *grown = realloc(q->lanes, n * sizeof *grown);
        if (grown) {
            memset(grown + q->nlanes, 0, (n - q->nlanes) * sizeof *grown);
            q->lanes = grown;
            q->nlanes = n;
        } else {
            r = -1;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return r;
}

int nic_start(void *h) {
    nic *q = h;
    if (q->running) return 0;
    int r = pthread_create(&q->thread, NULL, run, q); /* inherits the caller's scheduling */
    if (r == 0) q->running = 1;
    return r;
}

/* Make room for one more item (lock held); 0, or -1 when out of memory. */
static int reserve(nic *q) {
    if (q->n < q->cap) return 0;
    size_t cap = q->cap ? 2 * q->cap : 1024;
    item *grown = realloc(q->heap, cap * sizeof *grown);
    if (!grown) return -1;
    q->heap = grown;
    q->cap = cap;
    return 0;
}

/* Queue one datagram; 0, or -1 when out of memory (the datagram is then lost). */
int nic_submit(void *h, int fd, uint32_t addr, uint16_t port, int tos, int64_t due_ns,
               const unsigned char *data, size_t len) {
    nic *q = h;
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy) return -1;
    memcpy(copy, data, len);
    pthread_mutex_lock(&q->mu);
    if (reserve(q) != 0) {
        pthread_mutex_unlock(&q->mu);
        free(copy);
        return -1;
    }
    item it = {due_ns, q->seq++, fd, addr, port, tos, 0, len, copy};
    heap_push(q, it);
    q->lanes[0].queued++;
    if (due_ns < q->armed_ns) arm(q, due_ns > 0 ? due_ns : 1);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

/* One datagram of a nic_submit_many batch: this header (native byte order, packed), then its
 * `len` bytes; records follow each other. */
#pragma pack(push, 1)
typedef struct {
    int64_t due_ns;
    int32_t fd;
    uint32_t addr; /* network order */
    uint16_t port; /* network order */
    uint16_t tos;
    uint32_t len;
    uint32_t lane;
} record;
#pragma pack(pop)

/* Queue the datagrams of `size` bytes of records, in their order (one lock, the timer armed once
 * at most); how many could not be queued (out of memory, or a record cut short: the rest is lost).
 * A datagram of a lane that could not be queued is also counted in that lane (`lost`). */
int nic_submit_many(void *h, const unsigned char *buf, size_t size) {
    nic *q = h;
    int lost = 0, cut = 0;
    int64_t first = INT64_MAX;
    size_t at = 0;
    pthread_mutex_lock(&q->mu);
    while (at + sizeof(record) <= size) {
        record r;
        memcpy(&r, buf + at, sizeof r);
        at += sizeof r;
        if (r.len > size - at) {
            cut = 1;
            break;
        }
        unsigned char *copy = r.lane < q->nlanes ? malloc(r.len ? r.len : 1) : NULL;
        if (!copy || reserve(q) != 0) {
            free(copy);
            lost++;
            if (r.lane < q->nlanes) q->lanes[r.lane].lost++;
            at += r.len;
            continue;
        }
        memcpy(copy, buf + at, r.len);
        at += r.len;
        item it = {r.due_ns, q->seq++, r.fd, r.addr, r.port, r.tos, r.lane, r.len, copy};
        heap_push(q, it);
        q->lanes[r.lane].queued++;
        if (r.due_ns < first) first = r.due_ns;
    }
    if (cut || at != size) lost++; /* a record cut short, or a trailing piece shorter than a header */
    if (first < q->armed_ns) arm(q, first > 0 ? first : 1);
    pthread_mutex_unlock(&q->mu);
    return lost;
}

/* A lane's counters: sent, errors, queued, lateness samples taken so far, datagrams nic_submit_many
 * could not queue (zeros for no such lane). */
void nic_counts(void *h, size_t ln, uint64_t *out) {
    nic *q = h;
    pthread_mutex_lock(&q->mu);
    lane zero = {0}, *l = ln < q->nlanes ? &q->lanes[ln] : &zero;
    out[0] = l->sent;
    out[1] = l->errors;
    out[2] = l->queued;
    out[3] = l->nlate;
    out[4] = l->lost;
    pthread_mutex_unlock(&q->mu);
}

/* Copy up to `max` of a lane's lateness samples (ns) from index `from`; returns how many. */
size_t nic_lateness(void *h, size_t ln, size_t from, int64_t *out, size_t max) {
    nic *q = h;
    pthread_mutex_lock(&q->mu);
    size_t k = 0;
    if (ln < q->nlanes) {
        lane *l = &q->lanes[ln];
        for (size_t i = from; i < l->nlate && k < max; i++) out[k++] = l->late_ns[i];
    }
    pthread_mutex_unlock(&q->mu);
    return k;
}

/* Drop a lane's queued datagrams (its host stopped; the thread goes on for the other lanes);
 * returns how many. */
size_t nic_drop_lane(void *h, size_t ln) {
    nic *q = h;
    size_t dropped = 0, kept = 0;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n; i++) {
        if (q->heap[i].lane == ln) {
            free(q->heap[i].data);
            dropped++;
        } else {
            q->heap[kept++] = q->heap[i];
        }
    }
    q->n = kept;
    for (size_t i = kept / 2; i-- > 0;) sift_down(q, i);
    if (ln < q->nlanes) q->lanes[ln].queued = 0;
    pthread_mutex_unlock(&q->mu);
    return dropped;
}

/* Stop the thread; queued datagrams are dropped (returns how many). Frees nothing else. */
size_t nic_stop(void *h) {
    nic *q = h;
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    arm(q, 1); /* long past: the thread wakes at once and sees `stop` */
    pthread_mutex_unlock(&q->mu);
    if (q->running) pthread_join(q->thread, NULL);
    q->running = 0;
    size_t dropped = q->n;
    while (q->n) free(heap_pop(q).data);
    return dropped;
}

void nic_free(void *h) {
    nic *q = h;
    if (!q) return;
    nic_stop(q);
    free(q->heap);
    for (size_t i = 0; i < q->nlanes; i++) free(q->lanes[i].late_ns);
    free(q->lanes);
    pthread_mutex_destroy(&q->mu);
    close(q->timer);
    free(q);
}

/* Read up to `max` datagrams (non-blocking) into buf (slot bytes each): their lengths, source
 * addresses (network order), TOS bytes (0 without one) and kernel receive times (ns, 0 without
 * one).  Returns how many, 0 when none is waiting, -1 on another error (errno). */
int nic_recv(int fd, unsigned char *buf, size_t slot, int max, int32_t *lens, uint32_t *addrs,
             int32_t *tos, int64_t *stamps) {
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    struct sockaddr_in from[BATCH];
    union { char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec)) + 64];
            struct cmsghdr align; } ctl[BATCH];
    if (max > BATCH) max = BATCH;
    memset(msgs, 0, sizeof(msgs[0]) * max);
    for (int i = 0; i < max; i++) {
        iov[i].iov_base = buf + (size_t)i * slot;
        iov[i].iov_len = slot;
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof from[i];
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = ctl[i].buf;
        msgs[i].msg_hdr.msg_controllen = sizeof ctl[i].buf;
    }
    int r;
    do r = recvmmsg(fd, msgs, (unsigned)max, MSG_DONTWAIT, NULL);
    while (r < 0 && errno == EINTR);
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    for (int i = 0; i < r; i++) {
        lens[i] = (int32_t)msgs[i].msg_len;
        addrs[i] = from[i].sin_addr.s_addr;
        tos[i] = 0;
        stamps[i] = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
                tos[i] = *(unsigned char *)CMSG_DATA(c);
            } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec ts;
                memcpy(&ts, CMSG_DATA(c), sizeof ts);
                stamps[i] = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
            }
        }
    }
    return r;
}

/* The kernel's UDP floor of host_bench: the least a host agent pays the kernel, in its own
 * process's CPU, to send and to receive a cell datagram, with no Python and no transport.
 *
 * send: one connected UDP socket; a periodic timerfd at RATE / BATCH wake-ups per second; at
 *       each wake-up BATCH datagrams (1 unless given) of SIZE bytes go out with one sendmmsg, each
 *       with its TOS byte as IP_TOS ancillary data (ECT(0)), as the native NIC pacer sends the
 *       datagrams that are due. Wake-ups that found more than one tick expired count as late.
 * recv: one UDP socket with IP_RECVTOS and SO_TIMESTAMPNS set, as the agent's; it blocks in
 *       recvmmsg (up to BATCH datagrams, MSG_WAITFORONE) and reads each datagram's TOS byte and
 *       kernel receive time from its ancillary data, until COUNT datagrams came or none came for
 *       IDLE_MS milliseconds.
 *
 * Each prints one line when done: "<role> datagrams=N user_s=U system_s=S wakeups=W <count>=C",
 * the CPU of its own process (getrusage) over its datagrams (the sender's from its timer's start,
 * the receiver's from its first datagram); the count is the sender's late wake-ups, or the
 * receiver's datagrams that came without ECT(0) or without a receive time ("unmarked").
 *
 * usage: udp_floor send DST_IP PORT RATE COUNT SIZE [BATCH]
 *        udp_floor recv PORT COUNT IDLE_MS      (prints "ready" once bound)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define BATCH 256 /* the most datagrams one recvmmsg or sendmmsg call moves */
#define MAX_SIZE 9000
#define ECT0 0x02
#define START_WAIT_S 10 /* the receiver gives up if no datagram comes this long after "ready" */

static double seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* One line: role, datagrams, this process's CPU since `from` (seconds), wake-ups, and one more
 * count (`what`=`extra`). */
static void report(const char *role, long datagrams, struct rusage *from, long wakeups, const char *what,
                   long extra) {
    struct rusage to;
    getrusage(RUSAGE_SELF, &to);
    printf("%s datagrams=%ld user_s=%.6f system_s=%.6f wakeups=%ld %s=%ld\n", role, datagrams,
           seconds(to.ru_utime) - seconds(from->ru_utime), seconds(to.ru_stime) - seconds(from->ru_stime),
           wakeups, what, extra);
    fflush(stdout);
}

static int fail(const char *what) {
    fprintf(stderr, "udp_floor: %s: %s\n", what, strerror(errno));
    return 1;
}

static int do_send(const char *dst, int port, double rate, long count, int size, int batch) {
    if (rate <= 0 || count <= 0 || size <= 0 || size > MAX_SIZE || batch < 1 || batch > BATCH) {
        fprintf(stderr, "udp_floor: send needs RATE > 0, COUNT > 0, SIZE in 1..%d and BATCH in 1..%d\n",
                MAX_SIZE, BATCH);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (fd < 0 || inet_pton(AF_INET, dst, &to.sin_addr) != 1)
        return fail("socket or destination address");
    if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0)
        return fail("connect");
    static char payload[MAX_SIZE];
    memset(payload, 0xA5, sizeof payload);
    struct iovec iov = {payload, (size_t)size};
    static char control[BATCH][CMSG_SPACE(sizeof(int))];
    static struct mmsghdr msgs[BATCH];

    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    long period_ns = (long)(1e9 * batch / rate);
    struct itimerspec every = {{period_ns / 1000000000L, period_ns % 1000000000L},
                               {period_ns / 1000000000L, period_ns % 1000000000L}};
    if (tfd < 0 || timerfd_settime(tfd, 0, &every, NULL) < 0)
        return fail("timerfd");
    struct rusage from;
    getrusage(RUSAGE_SELF, &from);
    long sent = 0, wakeups = 0, late = 0;
    while (sent < count) {
        uint64_t ticks;
        if (read(tfd, &ticks, sizeof ticks) != sizeof ticks) {
            if (errno == EINTR)
                continue;
            return fail("timerfd read");
        }
        wakeups++;
        late += ticks > 1;
        int n = count - sent < batch ? (int)(count - sent) : batch;
        for (int i = 0; i < n; i++) {
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov;
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = control[i];
            msgs[i].msg_hdr.msg_controllen = sizeof control[i];
            struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr);
            c->cmsg_level = IPPROTO_IP;
            c->cmsg_type = IP_TOS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            int tos = ECT0;
            memcpy(CMSG_DATA(c), &tos, sizeof tos);
        }
        int done = sendmmsg(fd, msgs, (unsigned)n, 0);
        if (done > 0)
            sent += done;
        else if (errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED)
            return fail("sendmmsg");
    }
    report("send", sent, &from, wakeups, "late", late);
    return 0;
}

static int do_recv(int port, long count, int idle_ms) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int one = 1, buf = 4 << 20;
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf) < 0)
        return fail("socket options");
    if (bind(fd, (struct sockaddr *)&at, sizeof at) < 0)
        return fail("bind");
    printf("ready\n");
    fflush(stdout);
    static char data[BATCH][2048];
    static char control[BATCH][CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
    static struct sockaddr_in from_addr[BATCH];
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    struct rusage from;
    long received = 0, wakeups = 0, marked = 0; /* marked: with ECT(0) and a receive time */
    int timed = 0;
    struct timeval start_wait = {START_WAIT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &start_wait, sizeof start_wait);
    while (received < count) {
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_base = data[i];
            iov[i].iov_len = sizeof data[i];
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_name = &from_addr[i];
            msgs[i].msg_hdr.msg_namelen = sizeof from_addr[i];
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = control[i];
            msgs[i].msg_hdr.msg_controllen = sizeof control[i];
        }
        int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break; /* IDLE_MS without a datagram: the sender is done or lost some */
            return fail("recvmmsg");
        }
        if (!timed) { /* the clock starts at the first datagram, not while waiting for it */
            getrusage(RUSAGE_SELF, &from);
            struct timeval idle = {idle_ms / 1000, (idle_ms % 1000) * 1000};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
            timed = 1;
        }
        wakeups++;
        for (int i = 0; i < n; i++) {
            int ect = 0, stamped = 0;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
                if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
                    ect = (*(unsigned char *)CMSG_DATA(c) & 0x03) == ECT0;
                else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
                    struct timespec ts;
                    memcpy(&ts, CMSG_DATA(c), sizeof ts);
                    stamped = ts.tv_sec > 0;
                }
            }
            marked += ect && stamped;
        }
        received += n;
    }
    if (!timed)
        getrusage(RUSAGE_SELF, &from);
    report("recv", received, &from, wakeups, "unmarked", received - marked);
    return 0;
}

int main(int argc, char **argv) {
    if ((argc == 7 || argc == 8) && strcmp(argv[1], "send") == 0)
        return do_send(argv[2], atoi(argv[3]), atof(argv[4]), atol(argv[5]), atoi(argv[6]), argc == 8 ? atoi(argv[7]) : 1);
    if (argc == 5 && strcmp(argv[1], "recv") == 0)
        return do_recv(atoi(argv[2]), atol(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: %s send DST_IP PORT RATE COUNT SIZE [BATCH] | recv PORT COUNT IDLE_MS\n", argv[0]);
    return 2;
}

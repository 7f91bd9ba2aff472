/* The native floor of switch_bench: the least a forwarder written in C pays to move frames
 * between two interfaces with AF_PACKET sockets, batched as a native switch engine would
 * (recvmmsg up to BATCH frames, sendmmsg them out of the other port). No parsing, no
 * tables, no queues: whatever a switch spends beyond this is its pipeline and its model.
 *
 * usage: native_floor IFACE_A IFACE_B   (prints "ready" once both ports are bound)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64
#define FRAME 2048

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

static int open_port(const char *name) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0) {
        perror("socket");
        exit(1);
    }
    int one = 1, buf = 4 << 20;
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    struct sockaddr_ll addr = {0};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = (int)if_nametoindex(name);
    if (addr.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        fprintf(stderr, "native_floor: cannot bind %s\n", name);
        exit(1);
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IFACE_A IFACE_B\n", argv[0]);
        return 2;
    }
    int ports[2] = {open_port(argv[1]), open_port(argv[2])};
    static char frames[BATCH][FRAME];
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = frames[i];
        iov[i].iov_len = FRAME;
    }
    printf("ready\n");
    fflush(stdout);
    struct pollfd fds[2] = {{ports[0], POLLIN, 0}, {ports[1], POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0)
            continue;
        for (int p = 0; p < 2; p++) {
            if (!(fds[p].revents & POLLIN))
                continue;
            memset(msgs, 0, sizeof msgs);
            for (int i = 0; i < BATCH; i++) {
                iov[i].iov_len = FRAME;
                msgs[i].msg_hdr.msg_iov = &iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            int n = recvmmsg(ports[p], msgs, BATCH, 0, NULL);
            if (n <= 0)
                continue;
            for (int i = 0; i < n; i++)
                iov[i].iov_len = msgs[i].msg_len;
            sendmmsg(ports[1 - p], msgs, (unsigned)n, 0);
        }
    }
}

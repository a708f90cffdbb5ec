/* SocketCAN over Unix sockets, for running an unmodified CAN SDK against a bus emulator (no kernel CAN needed).
 *
 * LD_PRELOAD this library into the process that runs the SDK. It changes four calls, and only for CAN sockets:
 *   socket(PF_CAN, SOCK_RAW, CAN_RAW)  -> an AF_UNIX SOCK_SEQPACKET socket (one datagram = one struct can_frame);
 *   ioctl(fd, SIOCGIFINDEX, ifr)       -> remembers the interface name, answers with a made-up index;
 *   bind(fd, sockaddr_can)             -> connects to the Unix socket <ROBODOJO_CAN_SOCKET_DIR>/<interface name>;
 *   setsockopt(fd, SOL_CAN_RAW, ...)   -> accepted and ignored (filters, loopback: the emulator sends only replies);
 *   close(fd)                          -> forgets the fd, so a later socket that reuses the number is left alone.
 * Every other call, and every other socket, goes to libc untouched. read/write/send/recv/select then work unchanged
 * on the Unix socket, which keeps frame boundaries.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#define SHIM_PF_CAN 29
#define SHIM_SOL_CAN_RAW 101
#define SHIM_SIOCGIFINDEX 0x8933
#define SHIM_MAX_FD 4096
#define SHIM_FIRST_INDEX 100

static char can_fd[SHIM_MAX_FD];                 /* 1: this fd is a CAN socket turned Unix socket */
static char if_name[SHIM_MAX_FD][IFNAMSIZ];       /* the interface each CAN fd asked for */

static int is_can(int fd) { return fd >= 0 && fd < SHIM_MAX_FD && can_fd[fd]; }

int socket(int domain, int type, int protocol) {
    static int (*real_socket)(int, int, int);
    if (!real_socket) real_socket = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    if (domain != SHIM_PF_CAN) return real_socket(domain, type, protocol);
    int fd = real_socket(AF_UNIX, SOCK_SEQPACKET | (type & (SOCK_NONBLOCK | SOCK_CLOEXEC)), 0);
    if (fd >= 0 && fd < SHIM_MAX_FD) {
        can_fd[fd] = 1;
        if_name[fd][0] = '\0';
    }
    return fd;
}

int ioctl(int fd, unsigned long request, ...) {
    static int (*real_ioctl)(int, unsigned long, void *);
    if (!real_ioctl) real_ioctl = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
    va_list args;
    va_start(args, request);
    void *arg = va_arg(args, void *);
    va_end(args);
    if (!is_can(fd) || request != SHIM_SIOCGIFINDEX) return real_ioctl(fd, request, arg);
    struct ifreq *ifr = (struct ifreq *)arg;
    memcpy(if_name[fd], ifr->ifr_name, IFNAMSIZ);
    if_name[fd][IFNAMSIZ - 1] = '\0';
    ifr->ifr_ifindex = SHIM_FIRST_INDEX + fd;
    return 0;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real_bind)(int, const struct sockaddr *, socklen_t);
    if (!real_bind) real_bind = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
    if (!is_can(fd)) return real_bind(fd, addr, len);
    const char *dir = getenv("ROBODOJO_CAN_SOCKET_DIR");
    struct sockaddr_un peer;
    memset(&peer, 0, sizeof(peer));
    peer.sun_family = AF_UNIX;
    int n = snprintf(peer.sun_path, sizeof(peer.sun_path), "%s/%s", dir ? dir : "/tmp/robodojo-can", if_name[fd]);
    if (n < 0 || (size_t)n >= sizeof(peer.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)) != 0) {
        fprintf(stderr, "can_shim: no bus emulator at %s (%s)\n", peer.sun_path, strerror(errno));
        errno = ENODEV;
        return -1;
    }
    return 0;
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t len) {
    static int (*real_setsockopt)(int, int, int, const void *, socklen_t);
    if (!real_setsockopt)
        real_setsockopt = (int (*)(int, int, int, const void *, socklen_t))dlsym(RTLD_NEXT, "setsockopt");
    if (is_can(fd) && level == SHIM_SOL_CAN_RAW) return 0;
    return real_setsockopt(fd, level, name, value, len);
}

int close(int fd) {
    static int (*real_close)(int);
    if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    if (is_can(fd)) can_fd[fd] = 0;
    return real_close(fd);
}

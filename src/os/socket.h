/* SPDX-License-Identifier: BSD-3-Clause */
/* Small Linux TCP socket helpers for the bootstrap and the socket transport: addresses (IPv4 and
 * IPv6), interface selection (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY), listen, connect with retry
 * until a deadline, and send/recv of whole buffers with a deadline and an abort flag.
 *
 * The helpers do not log failures of send/recv/connect: they report why through `enum sock_err`
 * so that the caller, who knows which peer and which operation, writes the one WARN. */
#ifndef MONEL_OS_SOCKET_H
#define MONEL_OS_SOCKET_H
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include "nccl.h"

/* Fits in the unique id: 28 bytes at most. */
union sock_addr {
  struct sockaddr sa;
  struct sockaddr_in sin;
  struct sockaddr_in6 sin6;
};

enum sock_err {
  SOCK_OK = 0,
  SOCK_EOF,     /* the peer closed the connection */
  SOCK_RESET,   /* ECONNRESET / EPIPE: the peer died */
  SOCK_TIMEOUT, /* the deadline passed */
  SOCK_ABORTED, /* *abort became non-zero */
  SOCK_REFUSED, /* connect: nobody listened until the deadline */
  SOCK_SYSERR   /* any other errno (kept in errno) */
};

#define SOCK_ADDR_STRLEN 64
#define SOCK_IFNAME_LEN  16

/* Monotonic clock in seconds. */
double sock_time_now(void);
socklen_t sock_addr_len(const union sock_addr* a);
/* "1.2.3.4:5" or "[::1]:5"; returns buf. */
const char* sock_addr_to_str(const union sock_addr* a, char* buf, size_t len);
int sock_addr_port(const union sock_addr* a);
/* Parse "host:port", "[v6addr]:port" or "hostname:port" (getaddrinfo; honours
 * NCCL_SOCKET_FAMILY). */
ncclResult_t sock_addr_parse(const char* str, union sock_addr* out);
/* Pick the address to listen on: NCCL_SOCKET_IFNAME (prefix list, '^' excludes, '=' exact),
 * NCCL_SOCKET_FAMILY; default the first non-loopback up interface, else loopback. Port 0. */
ncclResult_t sock_iface_find(union sock_addr* out, char* ifname, size_t ifname_len);
/* Every usable interface in that order, one address each (the first of the family asked for):
 * at most `max` into addrs (and names, if not NULL). Returns how many; 0 when none is up. */
int sock_iface_list(union sock_addr* addrs, char (*names)[SOCK_IFNAME_LEN], int max);
/* 1 if `name` is selected by the NCCL_SOCKET_IFNAME-style `spec` (exposed for tests). */
int sock_ifname_match(const char* spec, const char* name);

/* Listen on *addr (port 0: ephemeral); *addr receives the bound port. */
ncclResult_t sock_listen_open(union sock_addr* addr, int* fd);
/* Connect, retrying refused/unreachable attempts until `deadline` (sock_time_now() based). */
ncclResult_t sock_conn_open(const union sock_addr* addr, double deadline, const volatile int* abort,
                            int* fd, enum sock_err* err);
/* Accept one pending connection (non-blocking listen socket is not required). */
ncclResult_t sock_conn_accept(int listen_fd, int* fd, union sock_addr* peer);
/* Move exactly n bytes; on failure *err says why and ncclRemoteError (peer gone, timeout,
 * abort) or ncclSystemError is returned. deadline < 0: none. abort may be NULL. */
ncclResult_t sock_send_all(int fd, const void* buf, size_t n, double deadline,
                           const volatile int* abort, enum sock_err* err);
ncclResult_t sock_recv_all(int fd, void* buf, size_t n, double deadline, const volatile int* abort,
                           enum sock_err* err);
/* O_NONBLOCK on; -1 with errno on failure. */
int sock_nonblock(int fd);
/* A host that vanishes sends no FIN: keepalive probes find it when the connection is idle
 * (about 16 s), the TCP user timeout when sent data stays unacknowledged (20 s). */
void sock_keepalive(int fd);
/* A sentence fragment for an error: "the peer closed the connection", ... */
const char* sock_err_str(enum sock_err e);
void sock_close(int* fd);

#endif

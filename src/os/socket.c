/* SPDX-License-Identifier: BSD-3-Clause */
/* Linux TCP socket helpers: see socket.h. */
#include "os/socket.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

/* Longest single poll() so that the abort flag is noticed even without a wakeup. */
#define POLL_SLICE_MS 100

double sock_time_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

socklen_t sock_addr_len(const union sock_addr* a) {
  return a->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int sock_addr_port(const union sock_addr* a) {
  return ntohs(a->sa.sa_family == AF_INET6 ? a->sin6.sin6_port : a->sin.sin_port);
}

const char* sock_addr_to_str(const union sock_addr* a, char* buf, size_t len) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (a->sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a->sin6.sin6_addr, host, sizeof(host));
    snprintf(buf, len, "[%s]:%d", host, sock_addr_port(a));
  } else if (a->sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a->sin.sin_addr, host, sizeof(host));
    snprintf(buf, len, "%s:%d", host, sock_addr_port(a));
  } else {
    snprintf(buf, len, "<family %d>", a->sa.sa_family);
  }
  return buf;
}

const char* sock_err_str(enum sock_err e) {
  switch (e) {
  case SOCK_OK:
    return "no error";
  case SOCK_EOF:
    return "the peer closed the connection";
  case SOCK_RESET:
    return "the connection was reset (the peer died)";
  case SOCK_TIMEOUT:
    return "the deadline passed";
  case SOCK_ABORTED:
    return "the operation was aborted";
  case SOCK_REFUSED:
    return "nobody accepted the connection";
  default:
    return "a system call failed";
  }
}

void sock_close(int* fd) {
  if (fd != NULL && *fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

/* AF_INET, AF_INET6 or AF_UNSPEC from NCCL_SOCKET_FAMILY. */
static int family_wanted(void) {
  const char* f = param_str(PARAM_SOCKET_FAMILY);
  if (strcmp(f, "AF_INET") == 0) return AF_INET;
  if (strcmp(f, "AF_INET6") == 0) return AF_INET6;
  return AF_UNSPEC;
}

ncclResult_t sock_addr_parse(const char* str, union sock_addr* out) {
  char host[256], port[16];
  const char* colon;
  const char* hbeg = str;
  size_t hlen;
  if (str[0] == '[') {
    const char* close_b = strchr(str, ']');
    if (close_b == NULL || close_b[1] != ':') goto bad;
    hbeg = str + 1;
    hlen = (size_t)(close_b - hbeg);
    colon = close_b + 1;
  } else {
    colon = strrchr(str, ':');
    if (colon == NULL) goto bad;
    hlen = (size_t)(colon - str);
  }
  if (hlen == 0 || hlen >= sizeof(host) || strlen(colon + 1) == 0 ||
      strlen(colon + 1) >= sizeof(port))
    goto bad;
  memcpy(host, hbeg, hlen);
  host[hlen] = '\0';
  snprintf(port, sizeof(port), "%s", colon + 1);
  struct addrinfo hints = {.ai_family = family_wanted(), .ai_socktype = SOCK_STREAM};
  struct addrinfo* res = NULL;
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0 || res == NULL) {
    WARN("cannot resolve \"%s\" (from \"%s\"): %s; give a reachable host name or address", host,
         str, gai_strerror(rc));
    return ncclInvalidArgument;
  }
  memset(out, 0, sizeof(*out));
  memcpy(out, res->ai_addr, res->ai_addrlen <= sizeof(*out) ? res->ai_addrlen : sizeof(*out));
  freeaddrinfo(res);
  return ncclSuccess;
bad:
  WARN("\"%s\" is not an address of the form host:port or [ipv6]:port", str);
  return ncclInvalidArgument;
}

/* spec: "eth,ib" prefixes; "^docker" excludes prefixes; "=eth0" exact; "^=eth0" excludes exact. */
int sock_ifname_match(const char* spec, const char* name) {
  int exclude = 0, exact = 0;
  if (*spec == '^') exclude = 1, spec++;
  if (*spec == '=') exact = 1, spec++;
  int found = 0;
  const char* p = spec;
  while (*p != '\0' && !found) {
    const char* end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0) {
      if (exact)
        found = strlen(name) == n && strncmp(name, p, n) == 0;
      else
        found = strncmp(name, p, n) == 0;
    }
    p += n;
    if (*p == ',') p++;
  }
  return exclude ? !found : found;
}

static int usable(const struct ifaddrs* ifa, int family) {
  if (ifa->ifa_addr == NULL || !(ifa->ifa_flags & IFF_UP)) return 0;
  int f = ifa->ifa_addr->sa_family;
  if (f != AF_INET && f != AF_INET6) return 0;
  if (family != AF_UNSPEC && f != family) return 0;
  if (f == AF_INET6) { /* link-local addresses need a scope: not usable across hosts */
    const struct sockaddr_in6* s6 = (const struct sockaddr_in6*)ifa->ifa_addr;
    if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) return 0;
  }
  return 1;
}

/* 1 if an earlier entry of the list already named this interface. */
static int listed(const struct ifaddrs* list, const struct ifaddrs* ifa, int family) {
  for (const struct ifaddrs* p = list; p != ifa; p = p->ifa_next)
    if (usable(p, family) && strcmp(p->ifa_name, ifa->ifa_name) == 0) return 1;
  return 0;
}

int sock_iface_list(union sock_addr* addrs, char (*names)[SOCK_IFNAME_LEN], int max) {
  struct ifaddrs* list = NULL;
  const char* spec = param_str(PARAM_SOCKET_IFNAME);
  int family = family_wanted(), n = 0;
  if (getifaddrs(&list) != 0) return 0;
  for (int pass = 0; pass < 2 && n == 0; pass++) {
    for (const struct ifaddrs* ifa = list; ifa != NULL && n < max; ifa = ifa->ifa_next) {
      if (!usable(ifa, family) || listed(list, ifa, family)) continue;
      int loop = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
      if (spec[0] != '\0' ? !sock_ifname_match(spec, ifa->ifa_name) || pass == 1
                          : (pass == 0 ? loop : !loop))
        continue; /* pass 0: the interfaces asked for, or every non-loopback; pass 1: loopback */
      memset(&addrs[n], 0, sizeof addrs[n]);
      memcpy(&addrs[n], ifa->ifa_addr,
             ifa->ifa_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                  : sizeof(struct sockaddr_in));
      if (names != NULL) snprintf(names[n], SOCK_IFNAME_LEN, "%s", ifa->ifa_name);
      n++;
    }
  }
  freeifaddrs(list);
  return n;
}

ncclResult_t sock_iface_find(union sock_addr* out, char* ifname, size_t ifname_len) {
  char name[1][SOCK_IFNAME_LEN];
  if (sock_iface_list(out, name, 1) == 0) {
    WARN("no usable network interface matches NCCL_SOCKET_IFNAME=\"%s\" NCCL_SOCKET_FAMILY=\"%s\"; "
         "set them to an interface that is up",
         param_str(PARAM_SOCKET_IFNAME), param_str(PARAM_SOCKET_FAMILY));
    return ncclSystemError;
  }
  if (ifname != NULL && ifname_len > 0) snprintf(ifname, ifname_len, "%s", name[0]);
  return ncclSuccess;
}

ncclResult_t sock_listen_open(union sock_addr* addr, int* fd) {
  ncclResult_t res = ncclSuccess;
  int s = -1, one = 1;
  char str[SOCK_ADDR_STRLEN];
  socklen_t len = sock_addr_len(addr);
  SYSCHECKGOTO(s = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket", res, out);
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, &addr->sa, len) != 0) {
    WARN("cannot listen on %s: %s; choose another port or interface (NCCL_SOCKET_IFNAME)",
         sock_addr_to_str(addr, str, sizeof(str)), strerror(errno));
    res = ncclSystemError;
    goto out;
  }
  SYSCHECKGOTO(listen(s, 1024), "listen", res, out);
  SYSCHECKGOTO(getsockname(s, &addr->sa, &len), "getsockname", res, out);
  *fd = s;
  s = -1;
out:
  sock_close(&s);
  return res;
}

int sock_nonblock(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void sock_keepalive(int fd) {
  int on = 1, idle = 10, intvl = 2, cnt = 3;
  unsigned user_ms = 20000;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof user_ms);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

static void tune(int s) {
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

ncclResult_t sock_conn_accept(int listen_fd, int* fd, union sock_addr* peer) {
  union sock_addr tmp;
  socklen_t len = sizeof(tmp);
  int s = accept4(listen_fd, &tmp.sa, &len, SOCK_CLOEXEC);
  if (s < 0) {
    WARN("accept failed: %s", strerror(errno));
    return ncclSystemError;
  }
  tune(s);
  if (peer != NULL) *peer = tmp;
  *fd = s;
  return ncclSuccess;
}

/* Milliseconds to wait in one poll slice, or -1 when the deadline has passed. */
static int slice_ms(double deadline) {
  if (deadline < 0) return POLL_SLICE_MS;
  double left = deadline - sock_time_now();
  if (left <= 0) return -1;
  return left * 1000 < POLL_SLICE_MS ? (int)(left * 1000) + 1 : POLL_SLICE_MS;
}

ncclResult_t sock_conn_open(const union sock_addr* addr, double deadline, const volatile int* abort,
                            int* fd, enum sock_err* err) {
  double backoff = 0.01;
  for (;;) {
    if (abort != NULL && __atomic_load_n(abort, __ATOMIC_SEQ_CST))
      return *err = SOCK_ABORTED, ncclRemoteError;
    int s = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return *err = SOCK_SYSERR, ncclSystemError;
    if (connect(s, &addr->sa, sock_addr_len(addr)) == 0) {
      tune(s);
      *fd = s;
      *err = SOCK_OK;
      return ncclSuccess;
    }
    int e = errno;
    close(s);
    if (e != ECONNREFUSED && e != ETIMEDOUT && e != ENETUNREACH && e != EHOSTUNREACH &&
        e != EAGAIN && e != EINTR && e != ECONNRESET) {
      errno = e;
      return *err = SOCK_SYSERR, ncclSystemError;
    }
    if (deadline >= 0 && sock_time_now() + backoff > deadline)
      return *err = SOCK_REFUSED, ncclRemoteError;
    struct timespec ts = {0, (long)(backoff * 1e9)};
    nanosleep(&ts, NULL); /* retry pacing, not a wait for an event */
    if (backoff < 0.2) backoff *= 2;
  }
}

/* One direction of a whole-buffer transfer, shared by send and recv. */
static ncclResult_t move_all(int fd, char* buf, size_t n, int sending, double deadline,
                             const volatile int* abort, enum sock_err* err) {
  size_t done = 0;
  while (done < n) {
    if (abort != NULL && __atomic_load_n(abort, __ATOMIC_SEQ_CST))
      return *err = SOCK_ABORTED, ncclRemoteError;
    struct pollfd p = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
    int ms = slice_ms(deadline);
    if (ms < 0) return *err = SOCK_TIMEOUT, ncclRemoteError;
    int r = poll(&p, 1, ms);
    if (r < 0 && errno != EINTR) return *err = SOCK_SYSERR, ncclSystemError;
    if (r <= 0) continue;
    ssize_t k = sending ? send(fd, buf + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : recv(fd, buf + done, n - done, MSG_DONTWAIT);
    if (k > 0) {
      done += (size_t)k;
    } else if (k == 0 && !sending) {
      return *err = SOCK_EOF, ncclRemoteError;
    } else if (errno == ECONNRESET || errno == EPIPE) {
      return *err = SOCK_RESET, ncclRemoteError;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return *err = SOCK_SYSERR, ncclSystemError;
    }
  }
  *err = SOCK_OK;
  return ncclSuccess;
}

ncclResult_t sock_send_all(int fd, const void* buf, size_t n, double deadline,
                           const volatile int* abort, enum sock_err* err) {
  return move_all(fd, (char*)buf, n, 1, deadline, abort, err);
}

ncclResult_t sock_recv_all(int fd, void* buf, size_t n, double deadline, const volatile int* abort,
                           enum sock_err* err) {
  return move_all(fd, (char*)buf, n, 0, deadline, abort, err);
}

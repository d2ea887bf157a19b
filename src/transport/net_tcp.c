/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in TCP network, named "Socket" as in NCCL (see net_tcp.h for the wire format): one
 * device per usable interface (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY), listen/connect/accept
 * without blocking, and the close calls. The data path is in net_tcp_io.c.
 *
 * Connecting: connect() opens the control socket and the data sockets at once, each without
 * blocking, runs the handshake on each (with a key) and sends each a hello {token, connection
 * id, index}; it returns the comm when every hello is out. accept() takes whatever connections
 * are pending, serves their handshakes and reads their hellos without blocking, drops strangers
 * and those with another token, and returns a comm once all sockets of one connection id
 * arrived. */
#include "transport/net_tcp.h"
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include "util/check.h"
#include "util/param.h"
#include "transport/net_handle.h"
#include "os/pending.h"
#include "topo/host.h"

#define PENDING_MAX 256 /* accepted sockets whose connection is not complete yet */

struct tcp_dev {
  union sock_addr addr;
  char name[SOCK_IFNAME_LEN];
};

static pthread_once_t devs_once = PTHREAD_ONCE_INIT;
static struct tcp_dev devs[TCP_MAX_DEVS];
static int ndevs;

struct tcp_listen {
  int fd;
  int dev;
  uint64_t token;
  int nthreads, nsocks;
  unsigned char key[AUTH_KEY_BYTES];
  struct pend pend[PENDING_MAX]; /* accepted sockets until their connection is complete */
  struct pend_set ps;
};

struct tcp_connecting {
  int total; /* 1 + data sockets */
  int fd[1 + TCP_MAX_SOCKS];
  size_t sent[1 + TCP_MAX_SOCKS]; /* hello bytes sent */
  int up[1 + TCP_MAX_SOCKS];      /* connected */
  struct auth_cli cli[1 + TCP_MAX_SOCKS];
  struct tcp_hello hello;
  void* handle; /* its own (NET_KIND_CONNECTING), named by the tcp_handle */
  int keyed;
  unsigned char key[AUTH_KEY_BYTES];
};

static void find_devices(void) {
  union sock_addr addrs[TCP_MAX_DEVS];
  char names[TCP_MAX_DEVS][SOCK_IFNAME_LEN];
  ndevs = sock_iface_list(addrs, names, TCP_MAX_DEVS);
  for (int i = 0; i < ndevs; i++) {
    devs[i].addr = addrs[i];
    memcpy(devs[i].name, names[i], SOCK_IFNAME_LEN);
  }
}

static ncclResult_t tcp_devices(int* ndev) {
  pthread_once(&devs_once, find_devices);
  *ndev = ndevs;
  if (ndevs == 0) {
    WARN("Socket: no usable network interface matches NCCL_SOCKET_IFNAME=\"%s\" "
         "NCCL_SOCKET_FAMILY=\"%s\"; set them to an interface that is up",
         param_str(PARAM_SOCKET_IFNAME), param_str(PARAM_SOCKET_FAMILY));
    return ncclSystemError;
  }
  return ncclSuccess;
}

static ncclResult_t check_dev(int dev) {
  pthread_once(&devs_once, find_devices);
  if (dev < 0 || dev >= ndevs) {
    WARN("Socket: device %d does not exist (%d devices: one per interface that "
         "NCCL_SOCKET_IFNAME selects)",
         dev, ndevs);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* A number from a sysfs file of the interface, or `fallback`. */
static long sysfs_long(const char* ifname, const char* what, long fallback) {
  char path[128], buf[32];
  snprintf(path, sizeof path, "/sys/class/net/%s/%s", ifname, what);
  FILE* f = fopen(path, "r");
  if (f == NULL) return fallback;
  long v = fallback;
  if (fgets(buf, sizeof buf, f) != NULL) v = strtol(buf, NULL, 10);
  fclose(f);
  return v > 0 ? v : fallback;
}

static ncclResult_t tcp_get_properties(int dev, struct net_props* props) {
  NCCLCHECK(check_dev(dev));
  memset(props, 0, sizeof *props);
  snprintf(props->name, sizeof props->name, "%s", devs[dev].name);
  char link[128];
  snprintf(link, sizeof link, "/sys/class/net/%s/device", devs[dev].name);
  /* realpath may write up to PATH_MAX bytes: let it allocate, then keep what fits. */
  char* pci = realpath(link, NULL);
  snprintf(props->pci_path, sizeof props->pci_path, "%s", pci ? pci : "");
  free(pci);
  props->guid = (uint64_t)dev;
  props->ptr_support = NET_PTR_HOST;
  props->speed_mbps = (int)sysfs_long(devs[dev].name, "speed", 10000);
  props->port = 0;
  props->latency_us = 0;
  props->max_comms = 65536;
  props->max_recvs = TCP_MAX_RECVS;
  props->max_bytes = (size_t)1 << 46;
  return ncclSuccess;
}

static int machine_ranks = 0; /* the most ranks of a GPU comm on this machine (net_machine_ranks) */

void net_machine_ranks(int ranks) {
  int seen = __atomic_load_n(&machine_ranks, __ATOMIC_RELAXED);
  while (ranks > seen && !__atomic_compare_exchange_n(&machine_ranks, &seen, ranks, 1,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

int net_tcp_pool_max(int nthreads) {
  int64_t v = param_int(PARAM_SOCKET_POOL_MAX);
  if (v < 0) {
    int ranks = __atomic_load_n(&machine_ranks, __ATOMIC_RELAXED);
    v = topo_cpus() / (ranks > 1 ? ranks : 1) / 2;
    if (v > 2 * (int64_t)nthreads) v = 2 * (int64_t)nthreads;
  }
  if (v > TCP_MAX_SOCKS) v = TCP_MAX_SOCKS;
  return v > nthreads ? (int)v : nthreads;
}

/* Helper threads per connection and data sockets per thread, those of NCCL_SOCKET_NTHREADS and
 * NCCL_NSOCKS_PERTHREAD that are not set (< 0): 2, or after a GPU comm reported its ranks on this
 * machine, from the CPUs and those ranks (topo_socket_threads decides both); the layout is said
 * once per choice. */
static void auto_counts(int64_t* threads, int64_t* socks) {
  static int64_t said = 0;
  int cpus = topo_cpus(), ranks = __atomic_load_n(&machine_ranks, __ATOMIC_RELAXED);
  int n = ranks > 0 ? topo_socket_threads(cpus, ranks) : 2; /* 2: the CPU engine's connections */
  if (*threads < 0) *threads = n;
  if (*socks < 0) *socks = n;
  int64_t key = *threads * 1024 + *socks;
  if (ranks > 0 && __atomic_exchange_n(&said, key, __ATOMIC_RELAXED) != key)
    INFO(LOG_NET | LOG_INIT,
         "Socket: %d helper thread%s per connection (of the network device's pool, shared by its "
         "connections), %d data socket%s per thread (%d CPUs, %d GPU "
         "rank%s of a comm on this machine; NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD set "
         "them)",
         (int)*threads, *threads == 1 ? "" : "s", (int)*socks, *socks == 1 ? "" : "s", cpus, ranks,
         ranks == 1 ? "" : "s");
}

/* Threads and sockets per thread from the params, clamped so that their product is at most
 * TCP_MAX_SOCKS. NCCL_SOCKET_NTHREADS=0: the control socket alone (one descriptor and no thread a
 * connection, for ranks that talk to many peers; large messages then take longer). */
static void sock_counts(int* nthreads, int* nsocks) {
  int64_t t = param_int(PARAM_SOCKET_NTHREADS), s = param_int(PARAM_NSOCKS_PERTHREAD);
  if (t == 0) {
    *nthreads = *nsocks = 0;
    return;
  }
  if (t < 0 || s < 0) auto_counts(&t, &s);
  if (t < 1) t = 1;
  if (s < 1) s = 1;
  if (t > TCP_MAX_SOCKS) t = TCP_MAX_SOCKS;
  if (t * s > TCP_MAX_SOCKS) {
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      INFO(LOG_NET | LOG_ENV,
           "Socket: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD is above %d; using %d x %d",
           TCP_MAX_SOCKS, (int)t, (int)(TCP_MAX_SOCKS / t));
    s = TCP_MAX_SOCKS / t;
  }
  *nthreads = (int)t;
  *nsocks = (int)s;
}

/* Data sockets a connection whose messages are at most max_bytes can use: none where each
 * travels on the control socket, else all of them (several messages are in flight at once,
 * each over the sockets after the previous one's: fewer sockets than the layout's were slower
 * for 2-16 MB Send/Recv between 2 hosts). */
static void sock_counts_for(size_t max_bytes, int* nthreads, int* nsocks) {
  if (*nthreads == 0) return;
  if (max_bytes <= TCP_INLINE_MAX) {
    *nthreads = *nsocks = 0;
    return;
  }
}

static ncclResult_t tcp_listen_sized(int dev, const unsigned char* key, size_t max_bytes,
                                     void* handle, void** listen_comm) {
  ncclResult_t res = ncclSuccess;
  struct tcp_listen* l = NULL;
  struct tcp_handle h;
  *listen_comm = NULL;
  NCCLCHECK(check_dev(dev));
  memset(&h, 0, sizeof h);
  NCCLCALLOC(l, 1);
  l->fd = -1;
  l->dev = dev;
  h.addr = devs[dev].addr;
  NCCLCHECKGOTO(sock_listen_open(&h.addr, &l->fd), res, out);
  SYSCHECKGOTO(sock_nonblock(l->fd), "fcntl(O_NONBLOCK)", res, out);
  if (getrandom(&l->token, sizeof l->token, 0) != sizeof l->token) {
    WARN("Socket: getrandom failed while listening: %s", strerror(errno));
    res = ncclSystemError;
    goto out;
  }
  sock_counts(&l->nthreads, &l->nsocks);
  sock_counts_for(max_bytes, &l->nthreads, &l->nsocks);
  if (key != NULL) memcpy(l->key, key, sizeof l->key);
  l->ps = (struct pend_set){.p = l->pend,
                            .max = PENDING_MAX,
                            .want = sizeof(struct tcp_hello),
                            .limit_s = TCP_STRANGER_S,
                            .key = key != NULL ? l->key : NULL,
                            .where = "Socket network listener",
                            .accept_flags = SOCK_NONBLOCK};
  h.magic = TCP_MAGIC;
  h.token = l->token;
  h.nthreads = (uint16_t)l->nthreads;
  h.nsocks = (uint16_t)l->nsocks;
  memset(handle, 0, NET_HANDLE_BYTES);
  memcpy(handle, &h, sizeof h);
  *listen_comm = net_handle_new(l, NET_KIND_LISTEN);
  if (*listen_comm == NULL) res = ncclSystemError;
out:
  if (*listen_comm == NULL) {
    if (l != NULL) sock_close(&l->fd);
    free(l);
  }
  return res;
}

static ncclResult_t tcp_listen(int dev, const unsigned char* key, void* handle,
                               void** listen_comm) {
  return tcp_listen_sized(dev, key, SIZE_MAX, handle, listen_comm);
}

/* Tunes a connected socket: no Nagle; keepalive and a user timeout find a vanished host. */
static void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sock_keepalive(fd);
}

/* Frees a connection in progress; its fds too unless a comm took them (fds_taken). */
static void connecting_free(struct tcp_connecting* s, int fds_taken) {
  if (s == NULL) return;
  for (int i = 0; i < s->total && !fds_taken; i++) sock_close(&s->fd[i]);
  if (s->handle != NULL) net_handle_free(s->handle);
  free(s);
}

static ncclResult_t connecting_start(const struct tcp_handle* h, const unsigned char* key,
                                     struct tcp_connecting** out) {
  struct tcp_connecting* s = NULL;
  NCCLCALLOC(s, 1);
  s->total = 1 + h->nthreads * h->nsocks;
  for (int i = 0; i < s->total; i++) s->fd[i] = -1;
  s->keyed = key != NULL;
  if (key != NULL) memcpy(s->key, key, sizeof s->key);
  s->handle = net_handle_new(s, NET_KIND_CONNECTING);
  if (s->handle == NULL) {
    free(s);
    return ncclSystemError;
  }
  s->hello = (struct tcp_hello){
      .magic = TCP_MAGIC, .token = h->token, .nthreads = h->nthreads, .nsocks = h->nsocks};
  if (getrandom(&s->hello.conn_id, sizeof s->hello.conn_id, 0) != sizeof s->hello.conn_id) {
    WARN("Socket: getrandom failed while connecting: %s", strerror(errno));
    connecting_free(s, 0);
    return ncclSystemError;
  }
  for (int i = 0; i < s->total; i++) {
    s->fd[i] = socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd[i] < 0 ||
        (connect(s->fd[i], &h->addr.sa, sock_addr_len(&h->addr)) != 0 && errno != EINPROGRESS)) {
      char where[SOCK_ADDR_STRLEN];
      WARN("Socket: could not connect to %s: %s; check that the peer is reachable on "
           "NCCL_SOCKET_IFNAME",
           sock_addr_to_str(&h->addr, where, sizeof where), strerror(errno));
      connecting_free(s, 0);
      return ncclRemoteError;
    }
  }
  *out = s;
  return ncclSuccess;
}

/* Moves every socket of a connection forward; 1 when all sent their hello, -1 on failure. */
static int connecting_step(struct tcp_connecting* s, const struct tcp_handle* h) {
  int all = 1;
  for (int i = 0; i < s->total; i++) {
    if (!s->up[i]) {
      struct pollfd p = {.fd = s->fd[i], .events = POLLOUT};
      int err = 0;
      socklen_t len = sizeof err;
      if (poll(&p, 1, 0) <= 0) {
        all = 0;
        continue;
      }
      if (getsockopt(s->fd[i], SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        char where[SOCK_ADDR_STRLEN];
        WARN("Socket: could not connect to %s: %s; check that the peer is alive and reachable "
             "on NCCL_SOCKET_IFNAME",
             sock_addr_to_str(&h->addr, where, sizeof where), strerror(err));
        return -1;
      }
      s->up[i] = 1;
    }
    const char* why = NULL;
    int a = s->keyed ? auth_cli_step(&s->cli[i], s->fd[i], s->key, &why) : 0;
    if (a < 0) {
      char where[SOCK_ADDR_STRLEN];
      WARN("Socket: the listener at %s failed the handshake: %s",
           sock_addr_to_str(&h->addr, where, sizeof where), why);
      return -1;
    }
    if (a > 0) {
      all = 0;
      continue;
    }
    struct tcp_hello hello = s->hello;
    hello.index = (uint32_t)i;
    while (s->sent[i] < sizeof hello) {
      ssize_t k = send(s->fd[i], (char*)&hello + s->sent[i], sizeof hello - s->sent[i],
                       MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (k < 0) {
        char where[SOCK_ADDR_STRLEN];
        WARN("Socket: the connection to %s broke while it was set up: %s",
             sock_addr_to_str(&h->addr, where, sizeof where), strerror(errno));
        return -1;
      }
      s->sent[i] += (size_t)k;
    }
    if (s->sent[i] < sizeof hello) all = 0;
  }
  return all;
}

/* A comm over connected sockets: fds[0] is the control socket. Takes the fds (also on failure). */
static ncclResult_t comm_create(int is_send, int dev, int* fds, int nthreads, int nsocks,
                                const union sock_addr* peer, void** out) {
  struct tcp_comm* c = calloc(1, sizeof *c);
  int total = 1 + nthreads * nsocks;
  if (c != NULL) {
    c->socks = total > 1 ? calloc((size_t)(total - 1), sizeof *c->socks) : NULL;
    c->ahead = is_send ? NULL : malloc(TCP_READ_AHEAD);
    if ((total > 1 && c->socks == NULL) || (!is_send && c->ahead == NULL)) {
      free(c->socks);
      free(c->ahead);
      free(c);
      c = NULL;
    }
  }
  if (c == NULL) {
    WARN("Socket: out of host memory for a comm of %d sockets", total);
    for (int i = 0; i < total; i++) sock_close(&fds[i]);
    return ncclSystemError;
  }
  c->is_send = is_send;
  c->dev = dev;
  c->ctrl = fds[0];
  c->nthreads = nthreads;
  c->nsocks = nsocks;
  c->ndata = total - 1;
  for (int i = 0; i < total; i++) tune(fds[i]);
  for (int i = 1; i < total; i++) c->socks[i - 1].fd = fds[i];
  sock_addr_to_str(peer, c->peer, sizeof c->peer);
  c->handle = net_handle_new(c, is_send ? NET_KIND_SEND : NET_KIND_RECV);
  if (c->handle == NULL) {
    for (int i = 0; i < total; i++) sock_close(&fds[i]);
    free(c->ahead);
    free(c->socks);
    free(c);
    return ncclSystemError;
  }
  c->poll.fd = c->ctrl;
  net_tcp_poll_add(&c->poll);
  *out = c->handle;
  return ncclSuccess;
}

static ncclResult_t tcp_connect(int dev, const unsigned char* key, void* handle, void** send_comm) {
  struct tcp_handle h;
  struct tcp_connecting* s = NULL;
  *send_comm = NULL;
  NCCLCHECK(check_dev(dev));
  memcpy(&h, handle, sizeof h);
  int control_only = h.nthreads == 0 && h.nsocks == 0;
  if (h.magic != TCP_MAGIC || (!control_only && (h.nthreads < 1 || h.nsocks < 1)) ||
      h.nthreads * h.nsocks > TCP_MAX_SOCKS) {
    WARN("Socket: connect was given a handle that listen() did not fill (magic 0x%x): both "
         "sides must use the same network",
         h.magic);
    return ncclInvalidArgument;
  }
  if (h.stage == NULL) {
    NCCLCHECK(connecting_start(&h, key, &s));
    h.stage = s->handle;
    memcpy(handle, &h, sizeof h);
  } else if ((s = net_handle_get(h.stage, NET_KIND_CONNECTING)) == NULL ||
             s->total != 1 + h.nthreads * h.nsocks) {
    WARN("Socket: connect was given a handle that names no connection in progress (%p): the "
         "handle was not filled by listen(), or was changed between connect calls",
         h.stage);
    return ncclInvalidArgument;
  }
  int step = connecting_step(s, &h);
  if (step == 0) return ncclSuccess;
  h.stage = NULL;
  memcpy(handle, &h, sizeof h);
  if (step < 0) {
    connecting_free(s, 0);
    return ncclRemoteError;
  }
  ncclResult_t res = comm_create(1, dev, s->fd, h.nthreads, h.nsocks, &h.addr, send_comm);
  connecting_free(s, 1); /* the comm owns the fds now */
  return res;
}

_Static_assert(sizeof(struct tcp_hello) <= PEND_HELLO_MAX, "a hello fits a pending entry");
static const struct tcp_hello* hello_of(const struct pend* p) {
  return (const struct tcp_hello*)(const void*)p->hello;
}

/* Accepts what is pending, serves handshakes and reads hellos (os/pending.h: strangers are
 * dropped and logged); drops complete ones that name another listener. */
static void listen_step(struct tcp_listen* l) {
  pend_accept(&l->ps, l->fd);
  pend_progress(&l->ps);
  for (int i = 0; i < l->ps.n; i++) {
    if (!pend_complete(&l->ps, &l->pend[i])) continue;
    const struct tcp_hello* hi = hello_of(&l->pend[i]);
    if (hi->magic != TCP_MAGIC || hi->token != l->token || hi->nthreads != l->nthreads ||
        hi->nsocks != l->nsocks || hi->index > (uint32_t)(l->nthreads * l->nsocks)) {
      INFO(LOG_NET, "Socket: dropped a connection that presented another token (magic 0x%x)",
           hi->magic);
      pend_remove(&l->ps, i--, 0);
    }
  }
}

/* A complete connection among the pending sockets: its fds in index order. 0 if none. */
static int listen_take(struct tcp_listen* l, int* fds, union sock_addr* peer) {
  int total = 1 + l->nthreads * l->nsocks;
  for (int i = 0; i < l->ps.n; i++) {
    if (!pend_complete(&l->ps, &l->pend[i]) || hello_of(&l->pend[i])->index != 0) continue;
    uint64_t id = hello_of(&l->pend[i])->conn_id;
    int have = 0;
    for (int j = 0; j < total; j++) fds[j] = -1;
    for (int j = 0; j < l->ps.n; j++) {
      const struct pend* p = &l->pend[j];
      if (pend_complete(&l->ps, p) && hello_of(p)->conn_id == id && fds[hello_of(p)->index] < 0)
        fds[hello_of(p)->index] = p->fd, have++;
    }
    if (have < total) continue;
    socklen_t len = sizeof *peer;
    if (getpeername(fds[0], &peer->sa, &len) != 0) memset(peer, 0, sizeof *peer);
    for (int j = 0; j < l->ps.n; j++) /* the fds go to the comm */
      if (pend_complete(&l->ps, &l->pend[j]) && hello_of(&l->pend[j])->conn_id == id &&
          fds[hello_of(&l->pend[j])->index] == l->pend[j].fd)
        pend_remove(&l->ps, j--, 1);
    return 1;
  }
  return 0;
}

static ncclResult_t tcp_accept(void* listen_comm, void** recv_comm) {
  struct tcp_listen* l = net_handle_get(listen_comm, NET_KIND_LISTEN);
  int fds[1 + TCP_MAX_SOCKS];
  union sock_addr peer;
  *recv_comm = NULL;
  if (l == NULL) {
    WARN("Socket: accept was given %p, which is not an open listen comm (closed already?)",
         listen_comm);
    return ncclInvalidArgument;
  }
  listen_step(l);
  if (!listen_take(l, fds, &peer)) return ncclSuccess;
  return comm_create(0, l->dev, fds, l->nthreads, l->nsocks, &peer, recv_comm);
}

static ncclResult_t close_comm(void* comm, enum net_kind kind) {
  struct tcp_comm* c = net_handle_get(comm, kind);
  if (c == NULL) {
    WARN("Socket: close was given %p, which is not an open %s", comm, net_kind_name(kind));
    return ncclInvalidArgument;
  }
  if (kind == NET_KIND_RECV && c->inflight > 0) /* net.h's close contract was not kept */
    INFO(LOG_NET, "Socket: receive comm closed with %d receives posted; they are cancelled",
         c->inflight);
  net_tcp_poll_remove(&c->poll);
  net_tcp_comm_stop(c);
  net_handle_free(c->handle);
  sock_close(&c->ctrl);
  for (int i = 0; i < c->ndata; i++) sock_close(&c->socks[i].fd);
  free(c->ahead);
  free(c->socks);
  free(c);
  return ncclSuccess;
}

static ncclResult_t tcp_close_send(void* send_comm) {
  return close_comm(send_comm, NET_KIND_SEND);
}

static ncclResult_t tcp_close_recv(void* recv_comm) {
  return close_comm(recv_comm, NET_KIND_RECV);
}

static ncclResult_t tcp_close_listen(void* listen_comm) {
  struct tcp_listen* l = net_handle_get(listen_comm, NET_KIND_LISTEN);
  if (l == NULL) {
    WARN("Socket: close was given %p, which is not an open listen comm", listen_comm);
    return ncclInvalidArgument;
  }
  net_handle_free(listen_comm);
  pend_close_all(&l->ps);
  sock_close(&l->fd);
  free(l);
  return ncclSuccess;
}

const struct net net_tcp = {
    .name = "Socket",
    .devices = tcp_devices,
    .get_properties = tcp_get_properties,
    .listen = tcp_listen,
    .listen_sized = tcp_listen_sized,
    .connect = tcp_connect,
    .accept = tcp_accept,
    .reg_mr = net_tcp_reg_mr,
    .dereg_mr = net_tcp_dereg_mr,
    .isend = net_tcp_isend,
    .irecv = net_tcp_irecv,
    .test = net_tcp_test,
    .close_send = tcp_close_send,
    .close_recv = tcp_close_recv,
    .close_listen = tcp_close_listen,
    .wait = net_tcp_wait,
    .wake = net_tcp_wake,
};

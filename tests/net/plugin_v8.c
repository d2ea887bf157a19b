/* SPDX-License-Identifier: BSD-3-Clause */
/* A small NCCL net plugin of interface v8 ("TestV8"), built as libnccl-net-testv8.so, for
 * Monel's tests: it carries bytes between processes and hosts over one TCP connection per comm,
 * with its own code (it calls nothing of Monel), and counts what its sends and receives carried.
 *
 * Wire: each message is a header {tag, size} and its bytes. Receives match messages in order,
 * by tag within a grouped receive. Everything is non-blocking: connect/accept return NULL until
 * the connection is up, isend/irecv queue, test() moves bytes.
 *
 * Report: at closeSend/closeRecv it logs (INFO, through the logger it got) and, when
 * MONEL_TEST_PLUGIN_LOG names a file, appends one line: "send|recv BYTES MSGS POSTED FLUSHES DEV
 * FAILED": the bytes and messages of the sends/receives that completed on that comm, the
 * requests still in flight at close (net.h's close contract: 0 unless the connection failed),
 * the flushes that completed, the device the comm was made on, and 1 if its connection failed
 * (an error from the socket or a message no receive matched), else 0. Requests in flight at
 * close are also said in a WARN line unless the connection failed (INFO then).
 * Devices (MONEL_TEST_PLUGIN_NDEV=n, default 1): n devices "tp0".."tp<n-1>" over the same
 * interface, each with its own PCI path (0000:00:1<k>.0, not a device of this machine), so that
 * a test sees which device each connection took.
 * CUDA memory (MONEL_TEST_PLUGIN_CUDA=1): the device advertises NCCL_PTR_CUDA and regMr takes
 * that type (the bytes are still moved by the CPU: the test gives it host memory), and iflush
 * wants registrations of that type only; a flush is a request of its comm (32 at most with the
 * others) that completes on its third test, so a caller that does not wait for it is seen.
 * Interfaces: NCCL_SOCKET_IFNAME's first prefix picks the IPv4 interface, else the first
 * non-loopback one, else loopback.
 * Interface v10 (built with TP_V10 as libnccl-net-testv10.so, "TestV10"): the same plugin with
 * v10's table (size_t sizes, a traffic-class config to connect, profiler handles to isend and
 * irecv). When init gets a profiler callback, every isend and irecv queued with a profiler
 * handle reports one event under it through the callback: start (id TP_EVENT_ID, data a
 * struct tp_event whose magic is TP_EVENT_MAGIC), one update with the same data, stop.
 * test_net_count("psend"/"precv") tells how many sends and receives were queued with a
 * handle, "send"/"recv" how many in all. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include "nccl.h"

#define MAGIC    0x74707638u /* "tpv8" */
#define MAX_REQS 32
#define MAX_RECV 4

typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line,
                         const char* fmt, ...);
typedef ncclResult_t (*profiler_cb_t)(void** event, int type, void* phandle, int64_t id,
                                      void* data);

struct props_v8 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, regIsGlobal, speed, port;
  float latency;
  int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
};

struct handle {
  uint32_t magic;
  int stage_fd; /* connector: its socket + 1 while connecting; 0 at first */
  uint64_t token;
  struct sockaddr_in addr;
};

struct hdr {
  int32_t tag;
  uint32_t pad;
  uint64_t size;
};

struct comm;

struct req {
  struct comm* comm;
  int used, n, matched, done;
  int flush; /* an iflush: done on its third test */
  uint64_t seq;
  char* data[MAX_RECV];
  size_t size[MAX_RECV], got[MAX_RECV];
  int tag[MAX_RECV], have[MAX_RECV];
};

struct comm {
  int fd, is_send, failed;
  struct req reqs[MAX_REQS];
  uint64_t posted, cur; /* cur: the request whose message the socket moves now */
  struct hdr h;
  size_t off;
  int buf; /* receive: the buffer the current message goes to */
  unsigned long long bytes, msgs, flushes;
  int dev;
};

struct listener {
  int fd;
  int dev;
  uint64_t token;
  int pending; /* accepted, token not read yet */
  size_t got;
  uint64_t tok;
};

static logger_t logger;

#ifdef TP_V10
#define TP_EVENT_ID    ((int64_t)0x7e << 16 | 1) /* plugin type 0x7e, version 1 */
#define TP_EVENT_MAGIC 0x7e57e7u
struct tp_event {
  uint32_t magic;
  int is_send;
};
static const struct tp_event tp_events[2] = {{TP_EVENT_MAGIC, 0}, {TP_EVENT_MAGIC, 1}};
static profiler_cb_t profiler;
static int queued[2], with_handle[2]; /* receives, sends; read with test_net_count */

/* One event under the step a send or receive was queued for. */
static void report_event(void* phandle, int is_send) {
  void* ev = NULL;
  void* data = (void*)&tp_events[is_send];
  __atomic_fetch_add(&queued[is_send], 1, __ATOMIC_RELAXED);
  if (profiler == NULL || phandle == NULL) return;
  __atomic_fetch_add(&with_handle[is_send], 1, __ATOMIC_RELAXED);
  profiler(&ev, 0, phandle, TP_EVENT_ID, data);
  profiler(&ev, 2, NULL, TP_EVENT_ID, data);
  profiler(&ev, 1, NULL, TP_EVENT_ID, NULL);
}

__attribute__((visibility("default"))) int test_net_count(const char* what);
int test_net_count(const char* what) {
  int is_send = what[0] == 'p' ? what[1] == 's' : what[0] == 's';
  return __atomic_load_n(what[0] == 'p' ? &with_handle[is_send] : &queued[is_send],
                         __ATOMIC_RELAXED);
}
#endif

#define LOG(fmt, ...) logger(3, 16, __FILE__, __LINE__, "TestV8: " fmt, __VA_ARGS__)

static ncclResult_t tp_init(logger_t log) {
  logger = log;
  LOG("%s", "initialized");
  return ncclSuccess;
}

#ifdef TP_V10
static ncclResult_t tp_init_v10(logger_t log, profiler_cb_t prof) {
  profiler = prof;
  return tp_init(log);
}
#endif

static int ndev(void) {
  const char* c = getenv("MONEL_TEST_PLUGIN_NDEV");
  int n = c ? atoi(c) : 1;
  return n >= 1 && n <= 8 ? n : 1;
}

static ncclResult_t tp_devices(int* n) {
  *n = ndev();
  return ncclSuccess;
}

static int cuda_mode(void) {
  const char* c = getenv("MONEL_TEST_PLUGIN_CUDA");
  return c != NULL && strcmp(c, "1") == 0;
}

static ncclResult_t tp_props(int dev, struct props_v8* p) {
  static char names[8][16], paths[8][64];
  if (dev < 0 || dev >= ndev()) return ncclInvalidArgument;
  memset(p, 0, sizeof *p);
  snprintf(names[dev], sizeof names[dev], "tp%d", dev);
  snprintf(paths[dev], sizeof paths[dev], "/sys/devices/pci0000:00/0000:00:1%d.0", dev);
  p->name = names[dev];
  p->pciPath = ndev() > 1 ? paths[dev] : NULL;
  p->guid = (uint64_t)dev;
  p->ptrSupport = cuda_mode() ? 0x3 : 0x1; /* host memory, and CUDA memory if asked */
  p->speed = 10000;
  p->maxComms = 65536;
  p->maxRecvs = MAX_RECV;
  return ncclSuccess;
}

/* The address to listen on. */
static int pick_addr(struct sockaddr_in* out) {
  const char* want = getenv("NCCL_SOCKET_IFNAME");
  struct ifaddrs *list, *lo = NULL, *any = NULL, *match = NULL;
  if (getifaddrs(&list) != 0) return -1;
  for (struct ifaddrs* i = list; i != NULL; i = i->ifa_next) {
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
      continue;
    if (want && *want && *want != '^' && strncmp(i->ifa_name, want, strcspn(want, ",")) == 0 &&
        !match)
      match = i;
    if ((i->ifa_flags & IFF_LOOPBACK) && !lo) lo = i;
    if (!(i->ifa_flags & IFF_LOOPBACK) && !any) any = i;
  }
  struct ifaddrs* pick = match ? match : any ? any : lo;
  if (pick) memcpy(out, pick->ifa_addr, sizeof *out);
  freeifaddrs(list);
  return pick ? 0 : -1;
}

static ncclResult_t tp_listen(int dev, void* handle, void** listen_comm) {
  struct handle h = {.magic = MAGIC};
  socklen_t len = sizeof h.addr;
  struct listener* l = calloc(1, sizeof *l);
  if (l == NULL || pick_addr(&h.addr) != 0) return free(l), ncclSystemError;
  h.addr.sin_port = 0;
  l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->fd < 0 || bind(l->fd, (struct sockaddr*)&h.addr, sizeof h.addr) != 0 ||
      listen(l->fd, 128) != 0 || getsockname(l->fd, (struct sockaddr*)&h.addr, &len) != 0 ||
      getrandom(&l->token, sizeof l->token, 0) != sizeof l->token) {
    if (l->fd >= 0) close(l->fd);
    free(l);
    return ncclSystemError;
  }
  h.token = l->token;
  l->dev = dev;
  memset(handle, 0, 128);
  memcpy(handle, &h, sizeof h);
  *listen_comm = l;
  return ncclSuccess;
}

static struct comm* comm_new(int fd, int is_send) {
  struct comm* c = calloc(1, sizeof *c);
  int one = 1;
  if (c == NULL) return NULL;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->fd = fd;
  c->is_send = is_send;
  return c;
}

static ncclResult_t tp_connect(int dev, void* handle, void** send_comm, void** dev_handle) {
  struct handle h;
  memcpy(&h, handle, sizeof h);
  *send_comm = NULL;
  if (h.magic != MAGIC) return ncclInvalidArgument;
  if (h.stage_fd == 0) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ncclSystemError;
    if (connect(fd, (struct sockaddr*)&h.addr, sizeof h.addr) != 0 && errno != EINPROGRESS) {
      close(fd);
      return ncclRemoteError;
    }
    h.stage_fd = fd + 1;
    memcpy(handle, &h, sizeof h);
  }
  int fd = h.stage_fd - 1, err = 0;
  socklen_t len = sizeof err;
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  if (poll(&p, 1, 0) <= 0) return ncclSuccess;
  h.stage_fd = 0;
  memcpy(handle, &h, sizeof h);
  /* a fresh socket takes 8 bytes at once */
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0 ||
      send(fd, &h.token, sizeof h.token, MSG_NOSIGNAL) != sizeof h.token) {
    close(fd);
    return ncclRemoteError;
  }
  struct comm* c = comm_new(fd, 1);
  if (c != NULL) c->dev = dev;
  *send_comm = c;
  return c ? ncclSuccess : ncclSystemError;
}

static ncclResult_t tp_accept(void* listen_comm, void** recv_comm, void** dev_handle) {
  struct listener* l = listen_comm;
  *recv_comm = NULL;
  if (l->pending <= 0) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return ncclSuccess;
    l->pending = fd + 1;
    l->got = 0;
  }
  int fd = l->pending - 1;
  while (l->got < sizeof l->tok) {
    ssize_t k = recv(fd, (char*)&l->tok + l->got, sizeof l->tok - l->got, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) return ncclSuccess;
    if (k <= 0) break;
    l->got += (size_t)k;
  }
  l->pending = 0;
  if (l->got < sizeof l->tok || l->tok != l->token) { /* a stranger */
    close(fd);
    return ncclSuccess;
  }
  struct comm* c = comm_new(fd, 0);
  if (c != NULL) c->dev = l->dev;
  *recv_comm = c;
  return c ? ncclSuccess : ncclSystemError;
}

/* A registration is its type (an int). */
static ncclResult_t tp_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  *mhandle = NULL;
  if (type != 0x1 && !(type == 0x2 && cuda_mode())) return ncclInvalidArgument;
  int* t = malloc(sizeof *t);
  if (t == NULL) return ncclSystemError;
  *t = type;
  *mhandle = t;
  return ncclSuccess;
}

static ncclResult_t tp_reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset,
                                     int fd, void** mhandle) {
  return ncclInvalidUsage;
}

static ncclResult_t tp_dereg_mr(void* comm, void* mhandle) {
  free(mhandle);
  return ncclSuccess;
}

static struct req* req_new(struct comm* c) {
  for (int i = 0; i < MAX_REQS; i++)
    if (!c->reqs[i].used) {
      struct req* r = &c->reqs[i];
      memset(r, 0, sizeof *r);
      r->used = 1;
      r->comm = c;
      r->seq = c->posted++;
      return r;
    }
  return NULL;
}

static struct req* req_cur(struct comm* c) {
  for (int i = 0; i < MAX_REQS; i++)
    if (c->reqs[i].used && c->reqs[i].seq == c->cur) return &c->reqs[i];
  return NULL;
}

/* Moves bytes of the current messages; -1 when the connection failed. */
static int progress(struct comm* c) {
  struct req* r;
  while (!c->failed && (r = req_cur(c)) != NULL) {
    size_t hs = sizeof c->h;
    if (c->is_send && c->off == 0) c->h = (struct hdr){r->tag[0], 0, r->size[0]};
    size_t total = hs + (c->off >= hs || c->is_send ? (size_t)c->h.size : 0);
    if (c->off < total) {
      char* p = c->off < hs ? (char*)&c->h + c->off : r->data[c->buf] + (c->off - hs);
      size_t want = (c->off < hs ? hs : total) - c->off;
      ssize_t k = c->is_send ? send(c->fd, p, want, MSG_DONTWAIT | MSG_NOSIGNAL)
                             : recv(c->fd, p, want, MSG_DONTWAIT);
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
      if (k <= 0) return c->failed = 1, -1;
      c->off += (size_t)k;
      if (!c->is_send && c->off == hs) { /* match the header to a buffer */
        c->buf = -1;
        for (int i = 0; i < r->n && c->buf < 0; i++)
          if (!r->have[i] && r->tag[i] == c->h.tag) c->buf = i;
        if (c->buf < 0 || c->h.size > r->size[c->buf]) return c->failed = 1, -1;
        r->have[c->buf] = 1;
        r->got[c->buf] = (size_t)c->h.size;
      }
      continue;
    }
    c->off = 0;
    if (++r->matched == r->n) r->done = 1, c->cur++;
  }
  return c->failed ? -1 : 0;
}

static ncclResult_t send_sized(void* send_comm, void* data, size_t size, int tag, void* phandle,
                               void** request) {
  struct comm* c = send_comm;
  struct req* r = req_new(c);
  *request = NULL;
  if (r == NULL) return ncclSuccess;
  r->n = 1;
  r->data[0] = data;
  r->size[0] = size;
  r->tag[0] = tag;
  *request = r;
#ifdef TP_V10
  report_event(phandle, 1);
#endif
  return progress(c) < 0 ? ncclRemoteError : ncclSuccess;
}

/* sizes[i] < 0 (interface v8's int) counts as 0. */
static ncclResult_t recv_sized(void* recv_comm, int n, void** data, const int64_t* sizes, int* tags,
                               void** phandles, void** request) {
  struct comm* c = recv_comm;
  *request = NULL;
  if (n < 1 || n > MAX_RECV) return ncclInvalidArgument;
  struct req* r = req_new(c);
  if (r == NULL) return ncclSuccess;
  r->n = n;
  for (int i = 0; i < n; i++) {
    r->data[i] = data[i];
    r->size[i] = sizes[i] < 0 ? 0 : (size_t)sizes[i];
    r->tag[i] = tags[i];
  }
  *request = r;
#ifdef TP_V10
  for (int i = 0; i < n; i++) report_event(phandles ? phandles[i] : NULL, 0);
#endif
  return progress(c) < 0 ? ncclRemoteError : ncclSuccess;
}

#ifndef TP_V10
static ncclResult_t tp_isend(void* send_comm, void* data, int size, int tag, void* mhandle,
                             void** request) {
  *request = NULL;
  if (size < 0) return ncclInvalidArgument;
  return send_sized(send_comm, data, (size_t)size, tag, NULL, request);
}

static ncclResult_t tp_irecv(void* recv_comm, int n, void** data, int* sizes, int* tags,
                             void** mhandles, void** request) {
  int64_t s[MAX_RECV];
  *request = NULL;
  if (n < 1 || n > MAX_RECV) return ncclInvalidArgument;
  for (int i = 0; i < n; i++) s[i] = sizes[i];
  return recv_sized(recv_comm, n, data, s, tags, NULL, request);
}
#else
static ncclResult_t tp_isend_v10(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                                 void* phandle, void** request) {
  return send_sized(send_comm, data, size, tag, phandle, request);
}

static ncclResult_t tp_irecv_v10(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                                 void** mhandles, void** phandles, void** request) {
  int64_t s[MAX_RECV];
  *request = NULL;
  if (n < 1 || n > MAX_RECV) return ncclInvalidArgument;
  for (int i = 0; i < n; i++) s[i] = sizes[i] > INT64_MAX ? INT64_MAX : (int64_t)sizes[i];
  return recv_sized(recv_comm, n, data, s, tags, phandles, request);
}
#endif

static ncclResult_t tp_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                              void** request) {
  struct comm* c = recv_comm;
  int bytes = 0;
  *request = NULL;
  if (n < 1 || n > MAX_RECV) return ncclInvalidArgument;
  for (int i = 0; i < n; i++) {
    if (mhandles[i] == NULL || *(int*)mhandles[i] != 0x2) {
      LOG("iflush of buffer %d, which is not CUDA memory", i);
      return ncclInvalidArgument;
    }
    bytes |= sizes[i] > 0;
  }
  if (!bytes) return ncclSuccess; /* nothing arrived: nothing to flush */
  for (int i = 0; i < MAX_REQS; i++)
    if (!c->reqs[i].used) {
      struct req* r = &c->reqs[i];
      memset(r, 0, sizeof *r);
      r->used = r->flush = 1;
      r->comm = c;
      r->seq = UINT64_MAX; /* never the message the socket moves */
      *request = r;
      return ncclSuccess;
    }
  LOG("iflush with %d requests in flight", MAX_REQS);
  return ncclInternalError;
}

static ncclResult_t tp_test(void* request, int* done, int* sizes) {
  struct req* r = request;
  struct comm* c = r->comm;
  *done = 0;
  if (r->flush) {
    if (++r->done < 3) return ncclSuccess;
    *done = 1;
    if (sizes) sizes[0] = 0;
    c->flushes++;
    r->used = 0;
    return ncclSuccess;
  }
  if (!r->done && progress(c) < 0) return ncclRemoteError;
  if (!r->done) return ncclSuccess;
  *done = 1;
  for (int i = 0; i < r->n; i++) {
    size_t moved = c->is_send ? r->size[i] : r->got[i];
    if (sizes) sizes[i] = (int)moved;
    c->bytes += moved;
    c->msgs++;
  }
  r->used = 0;
  return ncclSuccess;
}

/* The report of a comm: a log line, and a line in MONEL_TEST_PLUGIN_LOG if set. Requests still
 * in flight at close (sends or receives never completed, flushes never tested to their end) are
 * counted and said: with a WARN, as plugins built on fabric libraries do, unless the connection
 * failed (net.h's close contract allows them then). */
static void report(struct comm* c) {
  const char* path = getenv("MONEL_TEST_PLUGIN_LOG");
  const char* kind = c->is_send ? "send" : "receive";
  char line[160];
  int posted = 0, flushes = 0;
  for (int i = 0; i < MAX_REQS; i++) {
    posted += c->reqs[i].used;
    flushes += c->reqs[i].used && c->reqs[i].flush;
  }
  int n = snprintf(line, sizeof line, "%s %llu %llu %d %llu %d %d\n", c->is_send ? "send" : "recv",
                   c->bytes, c->msgs, posted, c->flushes, c->dev, c->failed);
  if (posted > 0)
    logger(c->failed ? 3 : 2, 16, __FILE__, __LINE__,
           "TestV8: a %s comm (device %d) was closed with requests in flight, never completed "
           "nor released: %d (%d of them flushes)%s",
           kind, c->dev, posted, flushes,
           c->failed ? " after its connection failed"
                     : ": the core must complete every request of a comm before it closes it");
  LOG("closing a %s comm: %llu bytes in %llu messages", kind, c->bytes, c->msgs);
  if (path == NULL || *path == '\0') return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) != n) LOG("could not write to %s", path);
  close(fd);
}

static ncclResult_t tp_close(void* comm) {
  struct comm* c = comm;
  report(c);
  close(c->fd);
  free(c);
  return ncclSuccess;
}

static ncclResult_t tp_close_listen(void* listen_comm) {
  struct listener* l = listen_comm;
  if (l->pending > 0) close(l->pending - 1);
  close(l->fd);
  free(l);
  return ncclSuccess;
}

#ifndef TP_V10
/* The table NCCL-compatible cores look up; its layout is interface v8's. */
struct net_v8 {
  const char* name;
  ncclResult_t (*init)(logger_t);
  ncclResult_t (*devices)(int*);
  ncclResult_t (*getProperties)(int, struct props_v8*);
  ncclResult_t (*listen)(int, void*, void**);
  ncclResult_t (*connect)(int, void*, void**, void**);
  ncclResult_t (*accept)(void*, void**, void**);
  ncclResult_t (*regMr)(void*, void*, size_t, int, void**);
  ncclResult_t (*regMrDmaBuf)(void*, void*, size_t, int, uint64_t, int, void**);
  ncclResult_t (*deregMr)(void*, void*);
  ncclResult_t (*isend)(void*, void*, int, int, void*, void**);
  ncclResult_t (*irecv)(void*, int, void**, int*, int*, void**, void**);
  ncclResult_t (*iflush)(void*, int, void**, int*, void**, void**);
  ncclResult_t (*test)(void*, int*, int*);
  ncclResult_t (*closeSend)(void*);
  ncclResult_t (*closeRecv)(void*);
  ncclResult_t (*closeListen)(void*);
  void* getDeviceMr;
  void* irecvConsumed;
};

__attribute__((visibility("default"))) const struct net_v8 ncclNetPlugin_v8 = {
    .name = "TestV8",
    .init = tp_init,
    .devices = tp_devices,
    .getProperties = tp_props,
    .listen = tp_listen,
    .connect = tp_connect,
    .accept = tp_accept,
    .regMr = tp_reg_mr,
    .regMrDmaBuf = tp_reg_mr_dmabuf,
    .deregMr = tp_dereg_mr,
    .isend = tp_isend,
    .irecv = tp_irecv,
    .iflush = tp_iflush,
    .test = tp_test,
    .closeSend = tp_close,
    .closeRecv = tp_close,
    .closeListen = tp_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
};
#else
struct props_v9 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, regIsGlobal, forceFlush, speed, port;
  float latency;
  int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
  struct {
    int ndevs;
    int devs[4];
  } vProps;
  size_t maxP2pBytes, maxCollBytes;
};

static ncclResult_t tp_props_v9(int dev, struct props_v9* p) {
  struct props_v8 q;
  ncclResult_t res = tp_props(dev, &q);
  if (res != ncclSuccess) return res;
  memset(p, 0, sizeof *p);
  p->name = q.name, p->pciPath = q.pciPath, p->guid = q.guid, p->ptrSupport = q.ptrSupport;
  p->speed = q.speed, p->port = q.port, p->latency = q.latency, p->maxComms = q.maxComms;
  p->maxRecvs = q.maxRecvs;
  p->vProps.ndevs = 1, p->vProps.devs[0] = dev;
  p->maxP2pBytes = p->maxCollBytes = (size_t)1 << 31;
  return ncclSuccess;
}

static ncclResult_t tp_connect_v10(int dev, void* config, void* handle, void** send_comm,
                                   void** dev_handle) {
  return tp_connect(dev, handle, send_comm, dev_handle);
}

/* Interface v10's table. */
struct net_v10 {
  const char* name;
  ncclResult_t (*init)(logger_t, profiler_cb_t);
  ncclResult_t (*devices)(int*);
  ncclResult_t (*getProperties)(int, struct props_v9*);
  ncclResult_t (*listen)(int, void*, void**);
  ncclResult_t (*connect)(int, void*, void*, void**, void**);
  ncclResult_t (*accept)(void*, void**, void**);
  ncclResult_t (*regMr)(void*, void*, size_t, int, void**);
  ncclResult_t (*regMrDmaBuf)(void*, void*, size_t, int, uint64_t, int, void**);
  ncclResult_t (*deregMr)(void*, void*);
  ncclResult_t (*isend)(void*, void*, size_t, int, void*, void*, void**);
  ncclResult_t (*irecv)(void*, int, void**, size_t*, int*, void**, void**, void**);
  ncclResult_t (*iflush)(void*, int, void**, int*, void**, void**);
  ncclResult_t (*test)(void*, int*, int*);
  ncclResult_t (*closeSend)(void*);
  ncclResult_t (*closeRecv)(void*);
  ncclResult_t (*closeListen)(void*);
  void* getDeviceMr;
  void* irecvConsumed;
  void* makeVDevice;
};

__attribute__((visibility("default"))) const struct net_v10 ncclNetPlugin_v10 = {
    .name = "TestV10",
    .init = tp_init_v10,
    .devices = tp_devices,
    .getProperties = tp_props_v9,
    .listen = tp_listen,
    .connect = tp_connect_v10,
    .accept = tp_accept,
    .regMr = tp_reg_mr,
    .regMrDmaBuf = tp_reg_mr_dmabuf,
    .deregMr = tp_dereg_mr,
    .isend = tp_isend_v10,
    .irecv = tp_irecv_v10,
    .iflush = tp_iflush,
    .test = tp_test,
    .closeSend = tp_close,
    .closeRecv = tp_close,
    .closeListen = tp_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
#endif

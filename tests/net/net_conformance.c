/* SPDX-License-Identifier: BSD-3-Clause */
/* The network interface's own test (transport/net.h), against the built-in TCP network and
 * against a plugin through the loader:
 *
 *   net_conformance net_       every call of the interface, on net_tcp
 *   net_conformance tcp_       what is particular to net_tcp: several sockets and helper
 *                              threads per comm, their limits, stale registrations
 *   NET_CONFORMANCE=plugin NCCL_NET_PLUGIN=... net_conformance net_      the same calls on the
 *                              plugin net_get() loaded (it must not be Socket)
 *   NET_CONFORMANCE=plugin ... net_conformance plugin_   the loader's rules, the v8 limits,
 *                              CUDA memory through the adapter (the plugin's CUDA mode) and
 *                              the test plugin's count of requests in flight at close
 *   NET_CONFORMANCE=ucx UCX_TLS=tcp net_conformance net_   the same calls on the UCX network
 *   NET_CONFORMANCE=ucx UCX_TLS=tcp net_conformance ucx_   its choice (NCCL_NET, MONEL_UCX_LIB)
 *
 * Both sides of every connection live in the test process and are driven without blocking
 * from one thread, as the proxy thread drives them. Contents are checked byte for byte. */
#include <dirent.h>
#include <sched.h>
#include <stddef.h>
#include <dlfcn.h>
#include <limits.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util/param.h"
#include "os/auth.h"
#include "transport/net.h"
#include "transport/net_tcp.h"
#include "transport/net_ucx.h"
#include "harness.h"

#define LIMIT_S 30.0

static const struct net* the_net(void) {
  const char* mode = getenv("NET_CONFORMANCE");
  if (mode != NULL && strcmp(mode, "ucx") == 0) return &net_ucx;
  if (mode == NULL || strcmp(mode, "plugin") != 0) return &net_tcp;
  const struct net* n = NULL;
  int dev = -1;
  CHECK_RES(net_get(&n, &dev), ncclSuccess);
  CHECK(n != NULL && dev == 0);
  CHECK(strcmp(n->name, "Socket") != 0); /* the plugin, not the built-in network */
  return n;
}

static unsigned char pat(int k, size_t j) {
  return (unsigned char)(k * 131 + j * 7 + (j >> 12) + 1);
}

static char* filled(int k, size_t n) {
  char* p = malloc(n ? n : 1);
  CHECK(p != NULL);
  for (size_t j = 0; j < n; j++) p[j] = (char)pat(k, j);
  return p;
}

static void check_bytes(const char* p, int k, size_t n) {
  for (size_t j = 0; j < n; j++)
    if ((unsigned char)p[j] != pat(k, j)) {
      fprintf(stderr, "message %d: byte %zu is 0x%02x, expected 0x%02x\n", k, j,
              (unsigned char)p[j], pat(k, j));
      CHECK(0);
    }
}

/* The job's secret every connection of these tests proves (os/auth.h). */
static const unsigned char KEY[AUTH_KEY_BYTES] = "conformance-key";

struct pair {
  unsigned char handle[NET_HANDLE_BYTES];
  void *l, *s, *r, *smh, *rmh;
};

/* listen (listen_sized where max_bytes is not SIZE_MAX), then connect and accept from this
 * thread until both comms are up. */
static void pair_open_sized(const struct net* n, struct pair* p, size_t max_bytes) {
  memset(p, 0, sizeof *p);
  if (max_bytes == SIZE_MAX)
    CHECK_RES(n->listen(0, KEY, p->handle, &p->l), ncclSuccess);
  else
    CHECK_RES(net_listen_sized(n, 0, KEY, max_bytes, p->handle, &p->l), ncclSuccess);
  CHECK(p->l != NULL);
  double t0 = test_now();
  while (p->s == NULL || p->r == NULL) {
    if (p->s == NULL) CHECK_RES(n->connect(0, KEY, p->handle, &p->s), ncclSuccess);
    if (p->r == NULL) CHECK_RES(n->accept(p->l, &p->r), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
}

static void pair_open(const struct net* n, struct pair* p) {
  pair_open_sized(n, p, SIZE_MAX);
}

static void pair_close(const struct net* n, struct pair* p) {
  if (p->smh) CHECK_RES(n->dereg_mr(p->s, p->smh), ncclSuccess);
  if (p->rmh) CHECK_RES(n->dereg_mr(p->r, p->rmh), ncclSuccess);
  CHECK_RES(n->close_send(p->s), ncclSuccess);
  CHECK_RES(n->close_recv(p->r), ncclSuccess);
  CHECK_RES(n->close_listen(p->l), ncclSuccess);
}

/* Test requests until every non-NULL one is done (each set to NULL then); sizes[i] gets what
 * request i reported for its first buffer. */
static void wait_all(const struct net* n, void** reqs, int nreq, size_t* sizes) {
  double t0 = test_now();
  for (int left = nreq; left > 0;) {
    left = 0;
    for (int i = 0; i < nreq; i++) {
      if (reqs[i] == NULL) continue;
      int done = 0;
      size_t got[8] = {0};
      CHECK_RES(n->test(reqs[i], &done, got), ncclSuccess);
      if (done) {
        reqs[i] = NULL;
        if (sizes) sizes[i] = got[0];
      } else {
        left++;
      }
    }
    CHECK(test_now() - t0 < LIMIT_S);
  }
}

/* One message of `size` bytes with `tag` through the pair, checked byte for byte; the receive
 * offers `room` bytes. */
static void one_message(const struct net* n, struct pair* p, int k, size_t size, size_t room) {
  char* src = filled(k, size);
  char* dst = calloc(room ? room : 1, 1);
  void* reqs[2] = {NULL, NULL};
  size_t sizes[2] = {1234, 1234};
  CHECK(dst != NULL);
  double t0 = test_now();
  while (reqs[0] == NULL) {
    CHECK_RES(n->isend(p->s, src, size, k, p->smh, NULL, &reqs[0]), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  while (reqs[1] == NULL) {
    void* d = dst;
    int tag = k;
    CHECK_RES(n->irecv(p->r, 1, &d, &room, &tag, &p->rmh, NULL, &reqs[1]), ncclSuccess);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  wait_all(n, reqs, 2, sizes);
  CHECK_EQ(sizes[0], size);
  CHECK_EQ(sizes[1], size);
  check_bytes(dst, k, size);
  for (size_t j = size; j < room && j < size + 4096; j++) CHECK_EQ(dst[j], 0); /* nothing more */
  free(src);
  free(dst);
}

static void registered_pair(const struct net* n, struct pair* p, char* sbuf, char* rbuf,
                            size_t len) {
  pair_open(n, p);
  CHECK_RES(n->reg_mr(p->s, sbuf, len, NET_PTR_HOST, &p->smh), ncclSuccess);
  CHECK_RES(n->reg_mr(p->r, rbuf, len, NET_PTR_HOST, &p->rmh), ncclSuccess);
  CHECK(p->smh != NULL && p->rmh != NULL);
}

TEST(net_devices_and_properties) {
  const struct net* n = the_net();
  int ndev = 0;
  struct net_props props;
  CHECK_RES(n->devices(&ndev), ncclSuccess);
  CHECK(ndev >= 1);
  for (int d = 0; d < ndev; d++) {
    memset(&props, 0, sizeof props);
    CHECK_RES(n->get_properties(d, &props), ncclSuccess);
    CHECK(props.name[0] != '\0');
    CHECK(props.ptr_support & NET_PTR_HOST);
    CHECK(props.max_recvs >= 1 && props.max_comms >= 1 && props.speed_mbps > 0);
    CHECK(props.max_bytes >= (size_t)INT_MAX);
    printf("device %d: %s, %d Mb/s, %d buffers per receive\n", d, props.name, props.speed_mbps,
           props.max_recvs);
  }
  CHECK(n->get_properties(ndev, &props) != ncclSuccess);
  CHECK(n->get_properties(-1, &props) != ncclSuccess);
}

TEST(net_connect_accept_never_block) {
  const struct net* n = the_net();
  struct pair p;
  memset(&p, 0, sizeof p);
  CHECK_RES(n->listen(0, KEY, p.handle, &p.l), ncclSuccess);
  /* Nobody connected yet: accept returns at once with nothing. */
  for (int i = 0; i < 100; i++) {
    double t0 = test_now();
    CHECK_RES(n->accept(p.l, &p.r), ncclSuccess);
    CHECK(p.r == NULL);
    CHECK(test_now() - t0 < 0.1);
  }
  int calls = 0;
  double t0 = test_now();
  while (p.s == NULL || p.r == NULL) {
    double c0 = test_now();
    if (p.s == NULL) CHECK_RES(n->connect(0, KEY, p.handle, &p.s), ncclSuccess);
    if (p.r == NULL) CHECK_RES(n->accept(p.l, &p.r), ncclSuccess);
    CHECK(test_now() - c0 < 0.5);
    CHECK(test_now() - t0 < LIMIT_S);
    calls++;
  }
  printf("connected after %d rounds of calls\n", calls);
  one_message(n, &p, 1, 1000, 1000);
  pair_close(n, &p);
}

/* Sizes around the inline limit, pieces, and one message of 64 MB. */
TEST(net_sizes_byte_exact) {
  const struct net* n = the_net();
  const size_t sizes[] = {0,     1,     7,           4096,          65535,
                          65536, 65537, 131072 + 60, (1 << 20) + 3, 64u << 20};
  struct pair p;
  pair_open(n, &p);
  for (int i = 0; i < (int)(sizeof sizes / sizeof *sizes); i++) {
    one_message(n, &p, i + 1, sizes[i], sizes[i]);
    one_message(n, &p, i + 101, sizes[i] / 2, sizes[i]); /* the receive is an upper bound */
  }
  pair_close(n, &p);
}

/* Zero-byte messages match, in order, among others. */
TEST(net_zero_size_in_order) {
  const struct net* n = the_net();
  struct pair p;
  pair_open(n, &p);
  for (int k = 0; k < 20; k++) one_message(n, &p, k, k % 3 == 0 ? 0 : (size_t)k * 1000, 20000);
  pair_close(n, &p);
}

/* NET_MAX_REQUESTS sends and receives in flight at once; one more is "not now"; every message
 * arrives in order into the receive posted for it. */
TEST(net_max_requests_in_order) {
  const struct net* n = the_net();
  struct pair p;
  enum { N = NET_MAX_REQUESTS };
  char *src[N], *dst[N];
  void *sreq[N], *rreq[N];
  size_t ssz[N], rsz[N];
  pair_open(n, &p);
  for (int k = 0; k < N; k++) {
    size_t len = (size_t)(k * 37 % 7) * 30000 + (size_t)k;
    src[k] = filled(k, len);
    dst[k] = malloc(300000);
    ssz[k] = len;
    sreq[k] = rreq[k] = NULL;
    CHECK_RES(n->isend(p.s, src[k], len, 7, NULL, NULL, &sreq[k]), ncclSuccess);
    CHECK(sreq[k] != NULL);
  }
  void* extra = (void*)1;
  CHECK_RES(n->isend(p.s, src[0], 1, 7, NULL, NULL, &extra), ncclSuccess);
  CHECK(extra == NULL); /* not now: NET_MAX_REQUESTS are in flight */
  for (int k = 0; k < N; k++) {
    size_t room = 300000;
    int tag = 7;
    void* d = dst[k];
    CHECK_RES(n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &rreq[k]), ncclSuccess);
    CHECK(rreq[k] != NULL);
  }
  wait_all(n, sreq, N, NULL);
  wait_all(n, rreq, N, rsz);
  for (int k = 0; k < N; k++) {
    CHECK_EQ(rsz[k], ssz[k]);
    check_bytes(dst[k], k, ssz[k]);
    free(src[k]);
    free(dst[k]);
  }
  pair_close(n, &p);
}

#include "net_conformance_wait.h"  /* net_wait_and_wake */
#include "net_conformance_order.h" /* net_order_while_connecting, ucx_tag_range */

/* A grouped receive takes one message per buffer, matched by tag whatever the send order. */
TEST(net_grouped_irecv_by_tag) {
  const struct net* n = the_net();
  struct net_props props;
  struct pair p;
  CHECK_RES(n->get_properties(0, &props), ncclSuccess);
  int g = props.max_recvs < 4 ? props.max_recvs : 4;
  CHECK(g >= 1);
  pair_open(n, &p);
  for (int round = 0; round < 3; round++) {
    char* dst[4];
    void* d[4];
    size_t room[4], got[4] = {0};
    int tags[4];
    for (int i = 0; i < g; i++) {
      dst[i] = calloc(400000, 1);
      d[i] = dst[i];
      room[i] = 400000;
      tags[i] = 100 + i;
    }
    void* rreq = NULL;
    CHECK_RES(n->irecv(p.r, g, d, room, tags, NULL, NULL, &rreq), ncclSuccess);
    CHECK(rreq != NULL);
    void* sreq[4] = {NULL};
    char* src[4];
    for (int j = 0; j < g; j++) {
      int i = (j + round + 1) % g; /* another order than the receive's */
      src[i] = filled(round * 10 + i, (size_t)(i + 1) * 33333 * (size_t)round);
      CHECK_RES(n->isend(p.s, src[i], (size_t)(i + 1) * 33333 * (size_t)round, 100 + i, NULL, NULL,
                         &sreq[j]),
                ncclSuccess);
      CHECK(sreq[j] != NULL);
    }
    double t0 = test_now();
    for (int done = 0; !done;) {
      CHECK_RES(n->test(rreq, &done, got), ncclSuccess);
      CHECK(test_now() - t0 < LIMIT_S);
    }
    wait_all(n, sreq, g, NULL);
    for (int i = 0; i < g; i++) {
      CHECK_EQ(got[i], (size_t)(i + 1) * 33333 * (size_t)round);
      check_bytes(dst[i], round * 10 + i, got[i]);
      free(dst[i]);
      free(src[i]);
    }
  }
  pair_close(n, &p);
}

/* 32 connections at once, each carrying its own messages. */
TEST(net_many_comms) {
  const struct net* n = the_net();
  enum { C = 32 };
  struct pair p[C];
  for (int c = 0; c < C; c++) memset(&p[c], 0, sizeof p[c]);
  for (int c = 0; c < C; c++) CHECK_RES(n->listen(0, KEY, p[c].handle, &p[c].l), ncclSuccess);
  double t0 = test_now();
  for (int up = 0; up < C;) {
    up = 0;
    for (int c = C - 1; c >= 0; c--) {
      if (p[c].s == NULL) CHECK_RES(n->connect(0, KEY, p[c].handle, &p[c].s), ncclSuccess);
      if (p[c].r == NULL) CHECK_RES(n->accept(p[c].l, &p[c].r), ncclSuccess);
      up += p[c].s != NULL && p[c].r != NULL;
    }
    CHECK(test_now() - t0 < LIMIT_S);
  }
  for (int round = 0; round < 2; round++)
    for (int c = 0; c < C; c++) one_message(n, &p[c], c + 1000 * round, (size_t)c * 5000, 200000);
  for (int c = 0; c < C; c++) pair_close(n, &p[c]);
}

TEST(net_register_memory) {
  const struct net* n = the_net();
  struct pair p;
  size_t len = 1 << 20;
  char *sbuf = filled(5, len), *rbuf = calloc(len, 1);
  registered_pair(n, &p, sbuf, rbuf, len);
  void* reqs[2] = {NULL, NULL};
  void* d = rbuf;
  int tag = 5;
  CHECK_RES(n->isend(p.s, sbuf, len, 5, p.smh, NULL, &reqs[0]), ncclSuccess);
  CHECK_RES(n->irecv(p.r, 1, &d, &len, &tag, &p.rmh, NULL, &reqs[1]), ncclSuccess);
  CHECK(reqs[0] && reqs[1]);
  wait_all(n, reqs, 2, NULL);
  check_bytes(rbuf, 5, len);
  pair_close(n, &p); /* deregisters both */
  free(sbuf);
  free(rbuf);
}

/* Made-up handles are refused, not followed. */
TEST(net_bad_handles) {
  const struct net* n = the_net();
  void* bogus = (void*)(uintptr_t)0x12345679;
  void* req = NULL;
  void* comm = NULL;
  int done = 0, tag = 0;
  size_t size = 8;
  char buf[8];
  void* d = buf;
  unsigned char handle[NET_HANDLE_BYTES];
  CHECK(n->isend(NULL, buf, 8, 0, NULL, NULL, &req) != ncclSuccess && req == NULL);
  CHECK(n->isend(bogus, buf, 8, 0, NULL, NULL, &req) != ncclSuccess && req == NULL);
  CHECK(n->irecv(bogus, 1, &d, &size, &tag, NULL, NULL, &req) != ncclSuccess && req == NULL);
  CHECK(n->test(NULL, &done, NULL) != ncclSuccess && !done);
  CHECK(n->test(bogus, &done, NULL) != ncclSuccess && !done);
  CHECK(n->accept(bogus, &comm) != ncclSuccess && comm == NULL);
  CHECK(n->close_send(bogus) != ncclSuccess);
  CHECK(n->close_recv(NULL) != ncclSuccess);
  CHECK(n->close_listen(bogus) != ncclSuccess);
  CHECK(n->reg_mr(bogus, buf, 8, NET_PTR_HOST, &req) != ncclSuccess);
  /* A send comm is not a receive comm. */
  struct pair p;
  pair_open(n, &p);
  CHECK(n->irecv(p.s, 1, &d, &size, &tag, NULL, NULL, &req) != ncclSuccess && req == NULL);
  CHECK(n->isend(p.r, buf, 8, 0, NULL, NULL, &req) != ncclSuccess && req == NULL);
  CHECK(n->close_recv(p.s) != ncclSuccess);
  pair_close(n, &p);
  if (n == &net_tcp || n == &net_ucx) { /* a handle that listen() did not fill */
    memset(handle, 0xab, sizeof handle);
    CHECK(n->connect(0, KEY, handle, &comm) != ncclSuccess && comm == NULL);
  }
}

/* After close, the comm and its requests are refused. */
TEST(net_use_after_close) {
  const struct net* n = the_net();
  struct pair p;
  char buf[64] = {0};
  void *sreq = NULL, *rreq = NULL, *req = NULL;
  int done = 0, tag = 3;
  size_t room = sizeof buf;
  void* d = buf;
  pair_open(n, &p);
  CHECK_RES(n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &rreq), ncclSuccess);
  CHECK(rreq != NULL);
  CHECK_RES(n->isend(p.s, buf, 64, 3, NULL, NULL, &sreq), ncclSuccess);
  void* reqs[1] = {sreq};
  wait_all(n, reqs, 1, NULL);
  /* A finished request is gone. */
  CHECK(n->test(sreq, &done, NULL) != ncclSuccess && !done);
  CHECK_RES(n->close_send(p.s), ncclSuccess);
  CHECK_RES(n->close_recv(p.r), ncclSuccess);
  CHECK_RES(n->close_listen(p.l), ncclSuccess);
  CHECK(n->isend(p.s, buf, 8, 3, NULL, NULL, &req) != ncclSuccess && req == NULL);
  CHECK(n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &req) != ncclSuccess && req == NULL);
  CHECK(n->test(rreq, &done, NULL) != ncclSuccess && !done); /* freed with its comm */
  CHECK(n->close_send(p.s) != ncclSuccess);
  CHECK(n->close_recv(p.r) != ncclSuccess);
  CHECK(n->close_listen(p.l) != ncclSuccess);
  CHECK(n->accept(p.l, &req) != ncclSuccess);
}

/* A message larger than its receive is an error, not an overflow. */
TEST(net_message_larger_than_receive) {
  const struct net* n = the_net();
  struct pair p;
  char* src = filled(1, 100000);
  char* dst = calloc(1, 1000 + 64);
  void *sreq = NULL, *rreq = NULL;
  size_t room = 1000;
  int tag = 1, done = 0;
  void* d = dst;
  pair_open(n, &p);
  CHECK_RES(n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &rreq), ncclSuccess);
  CHECK_RES(n->isend(p.s, src, 100000, 1, NULL, NULL, &sreq), ncclSuccess);
  ncclResult_t res = ncclSuccess;
  double t0 = test_now();
  while (res == ncclSuccess && !done) {
    res = n->test(rreq, &done, NULL);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  CHECK(res != ncclSuccess && !done);
  for (int j = 1000; j < 1064; j++) CHECK_EQ(dst[j], 0);
  n->close_send(p.s);
  n->close_recv(p.r);
  n->close_listen(p.l);
  free(src);
  free(dst);
}

#define BIG ((size_t)96 << 20) /* more than the sockets buffer when nobody reads */

/* The receiver closes while a large send is on its way: the send fails, it does not hang. */
TEST(net_receiver_closes_mid_transfer) {
  const struct net* n = the_net();
  struct pair p;
  char* src = filled(2, BIG);
  void* sreq = NULL;
  int done = 0;
  pair_open(n, &p);
  CHECK_RES(n->isend(p.s, src, BIG, 2, NULL, NULL, &sreq), ncclSuccess);
  CHECK(sreq != NULL);
  for (int i = 0; i < 20; i++) CHECK_RES(n->test(sreq, &done, NULL), ncclSuccess);
  CHECK(!done); /* nobody received: it cannot have finished */
  CHECK_RES(n->close_recv(p.r), ncclSuccess);
  ncclResult_t res = ncclSuccess;
  double t0 = test_now();
  while (res == ncclSuccess && !done) {
    res = n->test(sreq, &done, NULL);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  printf("the send failed with %d after %.3f s\n", (int)res, test_now() - t0);
  CHECK(!done && (res == ncclRemoteError || res == ncclSystemError));
  n->close_send(p.s);
  n->close_listen(p.l);
  free(src);
}

/* The sender closes in the middle of a large message: the receive fails. */
TEST(net_sender_closes_mid_transfer) {
  const struct net* n = the_net();
  struct pair p;
  char* src = filled(3, BIG);
  char* dst = malloc(BIG);
  void *sreq = NULL, *rreq = NULL;
  size_t room = BIG;
  int tag = 3, done = 0;
  void* d = dst;
  pair_open(n, &p);
  CHECK_RES(n->isend(p.s, src, BIG, 3, NULL, NULL, &sreq), ncclSuccess);
  CHECK(sreq != NULL);
  for (int i = 0; i < 20; i++) CHECK_RES(n->test(sreq, &done, NULL), ncclSuccess);
  CHECK(!done);
  CHECK_RES(n->close_send(p.s), ncclSuccess); /* the receiver has read nothing yet */
  double t0 = test_now();
  ncclResult_t res = n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &rreq); /* may fail already */
  CHECK(res != ncclSuccess || rreq != NULL);
  while (res == ncclSuccess && !done) {
    res = n->test(rreq, &done, NULL);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  printf("the receive failed with %d after %.3f s\n", (int)res, test_now() - t0);
  CHECK(!done && (res == ncclRemoteError || res == ncclSystemError));
  n->close_recv(p.r);
  n->close_listen(p.l);
  free(src);
  free(dst);
}

/* ---- net_tcp only ------------------------------------------------------------------------ */

#include "net_conformance_socks.h" /* tcp_one_message_*, tcp_small_*, tcp_sockets_*, tcp_threads_* */

/* Small messages queued on the control socket before any receive is posted, the sender gone
 * after its last one: the receiver reads the control stream ahead (TCP_READ_AHEAD), so one read
 * takes headers and bytes of several messages, and a message's bytes may straddle what was read
 * ahead and what is read straight into its buffer. Every message must land whole in its own
 * receive, in order, also after the sender closed; the next receive then fails. */
TEST(tcp_control_bytes_read_ahead) {
  const struct net* n = &net_tcp;
  const size_t sizes[] = {0,
                          1,
                          7,
                          8,
                          TCP_READ_AHEAD - 2 * sizeof(struct tcp_msg_hdr) - 1,
                          TCP_READ_AHEAD - sizeof(struct tcp_msg_hdr),
                          TCP_READ_AHEAD - 1,
                          TCP_READ_AHEAD,
                          TCP_READ_AHEAD + 1,
                          3,
                          2 * TCP_READ_AHEAD + 5,
                          24,
                          TCP_INLINE_MAX,
                          16};
  enum { N = sizeof sizes / sizeof *sizes, ROOM = TCP_INLINE_MAX + 64 };
  struct pair p;
  char* src[N];
  pair_open(n, &p);
  for (int k = 0; k < N; k++) {
    void* req = NULL;
    int done = 0;
    double t0 = test_now();
    src[k] = filled(k, sizes[k]);
    CHECK_RES(n->isend(p.s, src[k], sizes[k], 5, NULL, NULL, &req), ncclSuccess);
    CHECK(req != NULL); /* inline: the socket's buffer takes it, nothing is read yet */
    while (!done) {
      CHECK_RES(n->test(req, &done, NULL), ncclSuccess);
      CHECK(test_now() - t0 < LIMIT_S);
    }
  }
  CHECK_RES(n->close_send(p.s), ncclSuccess);
  for (int k = 0; k < N; k++) {
    char* dst = calloc(ROOM, 1);
    void *req = NULL, *d = dst;
    size_t room = ROOM, got = 0;
    int tag = 5;
    CHECK(dst != NULL);
    CHECK_RES(n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &req), ncclSuccess);
    CHECK(req != NULL);
    wait_all(n, &req, 1, &got);
    CHECK_EQ(got, sizes[k]);
    check_bytes(dst, k, sizes[k]);
    for (size_t j = sizes[k]; j < ROOM; j++) CHECK_EQ(dst[j], 0); /* nothing of the next one */
    free(dst);
    free(src[k]);
  }
  char one[8];
  void *req = NULL, *d = one;
  size_t room = sizeof one;
  int tag = 5, done = 0;
  ncclResult_t res = n->irecv(p.r, 1, &d, &room, &tag, NULL, NULL, &req);
  double t0 = test_now();
  while (res == ncclSuccess && !done) {
    res = n->test(req, &done, NULL);
    CHECK(test_now() - t0 < LIMIT_S);
  }
  CHECK(!done && res == ncclRemoteError); /* the stream ended after the last message */
  n->close_recv(p.r);
  n->close_listen(p.l);
}

/* A network without CUDA support refuses to register CUDA memory (and says so with a NULL
 * handle), registers host memory, and refuses a handle deregistered already. */
static void check_host_registrations(const struct net* n) {
  struct pair p;
  char buf[64];
  void* mh = (void*)1;
  pair_open(n, &p);
  CHECK(n->reg_mr(p.s, buf, sizeof buf, NET_PTR_CUDA, &mh) == ncclInvalidArgument);
  CHECK(mh == NULL);
  CHECK_RES(n->reg_mr(p.s, buf, sizeof buf, NET_PTR_HOST, &mh), ncclSuccess);
  CHECK_RES(n->dereg_mr(p.s, mh), ncclSuccess);
  CHECK(n->dereg_mr(p.s, mh) == ncclInvalidArgument); /* stale */
  pair_close(n, &p);
}

TEST(tcp_registrations) {
  check_host_registrations(&net_tcp);
}

#include "net_conformance_auth.h" /* the TCP network's strangers: tcp_stranger_*, tcp_auth_* */
#include "net_conformance_cuda.h" /* net_cuda_registration, plugin_cuda_* */

#include "net_conformance_plugin.h" /* chosen, expect, plugin_loader_*, plugin_v8_*, plugin_counts_* */

/* ---- the UCX network's choice (NET_CONFORMANCE=ucx ... net_conformance ucx_) -------------- */

static void expect_ucx_lib(const char* lib, const char* net, const char* want) {
  if (lib)
    setenv("MONEL_UCX_LIB", lib, 1);
  else
    unsetenv("MONEL_UCX_LIB");
  printf("MONEL_UCX_LIB=%s ", lib ? lib : "(unset)");
  expect("none", net, want);
  unsetenv("MONEL_UCX_LIB");
}

/* NCCL_NET=UCX forces it (any case), a missing UCX is then ncclSystemError (2); without
 * NCCL_NET, UCX is taken only with an RDMA transport, so here (UCX over TCP only, or no UCX)
 * the choice is Socket. */
TEST(ucx_choice) {
  expect_ucx_lib(NULL, "UCX", "UCX");
  expect_ucx_lib(NULL, "ucx", "UCX");
  expect_ucx_lib("libucp.so.0", "UCX", "UCX");
  expect_ucx_lib("libucp-absent.so.0", "UCX", "error 2");
  expect_ucx_lib("libm.so.6", "UCX", "error 2"); /* not UCX: no ucp_* functions */
  expect_ucx_lib("libucp-absent.so.0", NULL, "Socket");
  expect_ucx_lib("libucp.so.0", NULL,
                 net_ucx_open() == ncclSuccess && net_ucx_rdma() ? "UCX" : "Socket");
  expect_ucx_lib(NULL, "Socket", "Socket");
}

/* The UCX network's properties follow what UCX found. */
TEST(ucx_properties) {
  struct net_props p;
  CHECK_RES(net_ucx_open(), ncclSuccess);
  CHECK_RES(net_ucx.get_properties(0, &p), ncclSuccess);
  printf("%s; RDMA %d; pointers 0x%x\n", p.name, net_ucx_rdma(), p.ptr_support);
  CHECK(strncmp(p.name, "UCX ", 4) == 0);
  CHECK(strstr(net_ucx_transports(), "tcp/") != NULL); /* UCX_TLS=tcp */
  CHECK_EQ(p.ptr_support & NET_PTR_CUDA, 0);           /* no CUDA here */
  check_host_registrations(&net_ucx);
}

/* iflush reads the end of the last buffer received, through the network, and completes; a
 * receive of nothing needs none; a buffer outside its registration is refused. (Monel calls it
 * for CUDA memory only; it works the same on host memory, which is what this machine has.) */
TEST(ucx_iflush) {
  struct pair p;
  size_t len = 100000, got = 0;
  char *sbuf = filled(7, len), *rbuf = calloc(len, 1);
  registered_pair(&net_ucx, &p, sbuf, rbuf, len);
  CHECK(net_ucx.iflush != NULL && net_tcp.iflush == NULL);
  void* reqs[2] = {NULL, NULL};
  void* d = rbuf;
  int tag = 7;
  CHECK_RES(net_ucx.isend(p.s, sbuf, len, 7, p.smh, NULL, &reqs[0]), ncclSuccess);
  CHECK_RES(net_ucx.irecv(p.r, 1, &d, &len, &tag, &p.rmh, NULL, &reqs[1]), ncclSuccess);
  wait_all(&net_ucx, reqs, 2, NULL);
  check_bytes(rbuf, 7, len);
  void* flush = NULL;
  CHECK_RES(net_ucx.iflush(p.r, 1, &d, &len, &p.rmh, &flush), ncclSuccess);
  CHECK(flush != NULL);
  wait_all(&net_ucx, &flush, 1, &got);
  size_t none = 0;
  CHECK_RES(net_ucx.iflush(p.r, 1, &d, &none, &p.rmh, &flush), ncclSuccess);
  CHECK(flush == NULL);
  void* outside = rbuf + len;
  size_t one = 1;
  CHECK(net_ucx.iflush(p.r, 1, &outside, &one, &p.rmh, &flush) == ncclInvalidArgument);
  pair_close(&net_ucx, &p);
  free(sbuf);
  free(rbuf);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* proxy/fifo_net.c: the proxy's side of GPU FIFO connections across hosts, with host threads
 * playing the kernels, over the built-in TCP network (net_tcp). Two processes ("hosts" a and b,
 * MONEL_HOST_ID) each send on 3 connections and receive on 3, every one with its own FIFO shape
 * (4 x 200 KiB, 8 x 1000 and 64 x 256 bytes: few slots whose large steps travel as pieces on
 * the data sockets, an odd slot size, the most slots), through the real progress thread.
 *  - A sending thread writes each step's bytes into the mirror FIFO, records the size and
 *    publishes tail, waiting on head for a free slot, as the kernel does.
 *  - A receiving thread says which step it wants, waits for tail, checks the recorded size and
 *    every byte, and publishes head. A peer that finishes and frees its side first is no failure.
 * Steps take sizes 0, 1, the whole slot, the slot less one and pseudo-random ones, many times
 * round each FIFO (wraparound). Each host exits right after its last sends completed: the
 * receiver still gets every step (the close after the last message is the end of the stream,
 * not a loss). Then a peer is killed mid-stream: the survivor's connections fail with a sentence
 * naming the peer, and its waiting threads leave (no hang).
 * The set also grows while it runs (connections_added_while_running): the second and third shapes
 * are added and connected while the first streams, as the GPU engine connects a peer at its
 * first use.
 * net.h's close contract: after a clean end, no receive comm is closed with a receive posted
 * and no send comm with a send in flight, and no request ended in an error (every receive
 * completed with a message: the peer's close did not end it), on every connection shape, also
 * where one process holds both hosts' sets and frees one entirely before the other
 * (one_process_closes_one_set_after_the_other); the network is wrapped to count them. Where a
 * peer was killed the connections failed, which the contract allows: there only the ends (a
 * sentence, no hang) are checked. FIFO_NET_UCX=1 runs it all over the
 * UCX network, FIFO_NET_PLUGIN=1 over the net plugin the loader picks (NCCL_NET_PLUGIN).
 * GPUDirect RDMA (gdr_*): the slots apart from the counters, registered as CUDA memory, each
 * receive flushed before its tail (test_fifo_net_gdr.h); and MONEL_NET_GDR's choice.
 * Every wait has a deadline. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "proxy/fifo_net.h"
#include "proxy/proxy.h"
#include "device/gpu_fifo.h"
#include "transport/net.h"
#include "util/param.h"

#define NCONN    3
#define DEADLINE 30.0 /* seconds any single wait may take */

static const int shape_slots[NCONN] = {4, 8, 64};
static const size_t shape_bytes[NCONN] = {200 * 1024, 1000, 256};

struct side {
  int host;                   /* 0 = a, 1 = b */
  int send_steps, recv_steps; /* per connection */
  int signal_fd; /* receiving: write a byte after signal_after steps of connection 0 (or -1) */
  int signal_after;
  int first_conns; /* shapes connected before the set starts (0: all); the others are added to
                      the running set while the first ones stream */
};

struct play {
  const struct side* side;
  struct fifo_net* f;
  char* fifo;
  char* slots; /* slot 0: apart (GPUDirect RDMA), or after the counters */
  int conn;    /* 0..NCONN-1 */
  int from_host;
  int is_send;
  int result; /* 0 ok, 1 the set failed while waiting, 2 a deadline passed */
};

/* The network under test, wrapped: requests in flight per comm (receives and sends), how many
 * requests ended in an error, and how many comms were closed with requests still in flight
 * (net.h's close contract: after a clean end, none, and no request failed either: every receive
 * completed with a message, every send was taken). A request that failed stays counted as in
 * flight: a plugin need not free it (the test plugin does not). */
static const struct net* base;
static struct net counted;
enum { MAXC = 32, MAXR = 1024 };
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static void* rcomm[MAXC];
static int rposted[MAXC]; /* requests in flight */
static int rfailed[MAXC]; /* a call on the comm returned an error (test_fifo_net_gdr.h) */
static void *rreq[MAXR], *rreq_comm[MAXR];
static int posted_at_close; /* receive comms closed with receives in flight */
static int sends_at_close;  /* send comms closed with sends in flight */
static int failed_reqs;     /* requests whose post or test returned an error */

static int comm_slot(void* comm) {
  for (int i = 0; i < MAXC; i++)
    if (rcomm[i] == comm) return i;
  for (int i = 0; i < MAXC; i++)
    if (rcomm[i] == NULL) return rcomm[i] = comm, rposted[i] = rfailed[i] = 0, i;
  CHECK(0);
  return -1;
}

/* A post on comm returned res and *req. */
static void posted(void* comm, ncclResult_t res, void* req) {
  pthread_mutex_lock(&count_lock);
  int i = comm_slot(comm);
  if (res != ncclSuccess) rfailed[i] = 1, failed_reqs++;
  if (res == ncclSuccess && req != NULL) {
    rposted[i]++;
    int k = 0;
    while (k < MAXR && rreq[k] != NULL) k++;
    CHECK(k < MAXR);
    rreq[k] = req;
    rreq_comm[k] = comm;
  }
  pthread_mutex_unlock(&count_lock);
}

static ncclResult_t c_irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mh,
                            void** ph, void** req) {
  ncclResult_t res = base->irecv(comm, n, data, sizes, tags, mh, ph, req);
  posted(comm, res, *req);
  return res;
}

static ncclResult_t c_isend(void* comm, void* data, size_t size, int tag, void* mh, void* ph,
                            void** req) {
  ncclResult_t res = base->isend(comm, data, size, tag, mh, ph, req);
  posted(comm, res, *req);
  return res;
}

#include "test_fifo_net_gdr.h"

static ncclResult_t c_test(void* req, int* done, size_t* sizes) {
  ncclResult_t res = ncclSuccess;
  if (gdr_mode && gdr_test(req, done, sizes, &res)) return res;
  res = base->test(req, done, sizes);
  void* comm = NULL;
  if (res != ncclSuccess || *done) {
    pthread_mutex_lock(&count_lock);
    for (int k = 0; k < MAXR; k++)
      if (rreq[k] == req) {
        int i = comm_slot(rreq_comm[k]);
        if (res == ncclSuccess) rposted[i]--;
        if (res != ncclSuccess) rfailed[i] = 1, failed_reqs++;
        comm = rreq_comm[k];
        rreq[k] = NULL;
      }
    pthread_mutex_unlock(&count_lock);
  }
  if (gdr_mode && comm != NULL && res == ncclSuccess) gdr_received(comm, sizes[0]);
  return res;
}

/* The comm's entry is dropped at close; *at_close counts it if requests were in flight. */
static void closing(void* comm, int* at_close) {
  pthread_mutex_lock(&count_lock);
  int i = comm_slot(comm);
  if (rposted[i] > 0) ++*at_close;
  rcomm[i] = NULL;
  for (int k = 0; k < MAXR; k++)
    if (rreq_comm[k] == comm) rreq[k] = rreq_comm[k] = NULL;
  pthread_mutex_unlock(&count_lock);
}

static ncclResult_t c_close_recv(void* comm) {
  if (gdr_mode) gdr_closing(comm);
  closing(comm, &posted_at_close);
  return base->close_recv(comm);
}

static ncclResult_t c_close_send(void* comm) {
  closing(comm, &sends_at_close);
  return base->close_send(comm);
}

/* After a clean end: net.h's close contract held on every comm (who: names the process). */
static void check_closed_clean(const char* who) {
  if (posted_at_close != 0 || sends_at_close != 0 || failed_reqs != 0)
    fprintf(stderr,
            "%s: %d receive comms closed with receives in flight, %d send comms with sends in "
            "flight, %d requests failed\n",
            who, posted_at_close, sends_at_close, failed_reqs);
  CHECK_EQ(posted_at_close, 0);
  CHECK_EQ(sends_at_close, 0);
  CHECK_EQ(failed_reqs, 0);
}

static int env_is(const char* name, const char* value) {
  const char* v = getenv(name);
  return v != NULL && strcmp(v, value) == 0;
}

/* The network's devices: connection k is made on device k % ndevs (each its own with a plugin
 * that has several, as the GPU engine's channels spread over a GPU's NICs). */
static int ndevs = 1;

static const struct net* the_net(void) {
  int dev = 0;
  base = env_is("FIFO_NET_UCX", "1") ? &net_ucx : &net_tcp;
  if (env_is("FIFO_NET_PLUGIN", "1")) {
    CHECK_RES(net_get(&base, &dev), ncclSuccess);
    CHECK(strcmp(base->name, "Socket") != 0 && dev == 0);
    CHECK_RES(base->devices(&ndevs), ncclSuccess);
    CHECK(ndevs >= 1);
  }
  counted = *base;
  counted.irecv = c_irecv;
  counted.isend = c_isend;
  counted.test = c_test;
  counted.close_recv = c_close_recv;
  counted.close_send = c_close_send;
  if (gdr_mode) {
    struct net_props p;
    CHECK_RES(base->get_properties(0, &p), ncclSuccess);
    gdr_fake = !(p.ptr_support & NET_PTR_CUDA);
    counted.get_properties = g_props;
    counted.reg_mr = g_reg_mr;
    counted.iflush = g_iflush;
  }
  return &counted;
}

static volatile int fail_calls;
static char fail_sentence[512];
static int fail_peer = -1;

static void on_fail(void* arg, int peer, const char* sentence) {
  (void)arg;
  fail_peer = peer;
  snprintf(fail_sentence, sizeof fail_sentence, "%s", sentence);
  __atomic_add_fetch(&fail_calls, 1, __ATOMIC_RELEASE);
}

static size_t fifo_len(int k) {
  return GPU_FIFO_HEADER + (size_t)shape_slots[k] * shape_bytes[k];
}

static uint64_t* word(char* fifo, size_t off) {
  return (uint64_t*)(fifo + off);
}

/* Bytes of step s of connection k sent by host h. */
static size_t step_size(int k, uint64_t s) {
  size_t slot = shape_bytes[k];
  switch (s % 5) {
  case 0:
    return 0;
  case 1:
    return 1;
  case 2:
    return slot;
  case 3:
    return slot - 1;
  default:
    return (size_t)((s * 2654435761u) % slot);
  }
}

static unsigned char pattern(int h, int k, uint64_t s, size_t i) {
  return (unsigned char)(h * 97 + k * 131 + s * 7 + i * 13 + (i >> 8));
}

/* Waits until *w >= want; 1 the set failed, 2 the deadline passed. */
static int wait_word(struct play* p, const uint64_t* w, uint64_t want) {
  double end = test_now() + DEADLINE;
  while (__atomic_load_n(w, __ATOMIC_ACQUIRE) < want) {
    if (fifo_net_failed(p->f)) return 1;
    if (test_now() > end) return 2;
    sched_yield();
  }
  return 0;
}

static void* play_main(void* arg) {
  struct play* p = arg;
  int k = p->conn, ns = shape_slots[k];
  int nsteps = p->is_send ? p->side->send_steps : p->side->recv_steps;
  for (uint64_t s = 0; s < (uint64_t)nsteps; s++) {
    char* slot = p->slots + (size_t)(s % (uint64_t)ns) * shape_bytes[k];
    size_t size = step_size(k, s);
    if (p->is_send) {
      int w = s >= (uint64_t)ns ? wait_word(p, word(p->fifo, GPU_FIFO_HEAD), s + 1 - ns) : 0;
      if (w) {
        p->result = w;
        return NULL;
      }
      for (size_t i = 0; i < size; i++) slot[i] = (char)pattern(p->side->host, k, s, i);
      __atomic_store_n(word(p->fifo, GPU_FIFO_SIZES + 8 * (s % ns)), size, __ATOMIC_RELAXED);
      __atomic_store_n(word(p->fifo, GPU_FIFO_TAIL), s + 1, __ATOMIC_RELEASE);
    } else {
      __atomic_store_n(word(p->fifo, GPU_FIFO_WANT), s + 1, __ATOMIC_RELEASE);
      int w = wait_word(p, word(p->fifo, GPU_FIFO_TAIL), s + 1);
      if (w) {
        p->result = w;
        return NULL;
      }
      if (gdr_mode) gdr_kernel_saw(p->slots, s);
      CHECK_EQ(*word(p->fifo, GPU_FIFO_SIZES + 8 * (s % ns)), size);
      for (size_t i = 0; i < size; i++)
        if ((unsigned char)slot[i] != pattern(p->from_host, k, s, i)) {
          fprintf(stderr, "host %d conn %d step %llu byte %zu: %u, expected %u\n", p->side->host, k,
                  (unsigned long long)s, i, (unsigned char)slot[i], pattern(p->from_host, k, s, i));
          exit(1);
        }
      /* the bytes past the size are the previous steps' or zero: not checked */
      __atomic_store_n(word(p->fifo, GPU_FIFO_HEAD), s + 1, __ATOMIC_RELEASE);
      if (k == 0 && p->side->signal_fd >= 0 && s + 1 == (uint64_t)p->side->signal_after) {
        char b = 1;
        CHECK_EQ(write(p->side->signal_fd, &b, 1), 1);
      }
    }
  }
  return NULL;
}

static void read_all(int fd, void* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t k = read(fd, (char*)buf + got, len - got);
    CHECK(k > 0);
    got += (size_t)k;
  }
}

/* The proxy thread's hook (fifo_net_on_thread): how often it ran, and whether on this thread. */
static int on_thread_calls, on_thread_here;
static pthread_t main_thread;

static void on_thread(void* arg) {
  CHECK(arg == &on_thread_calls);
  on_thread_here |= pthread_equal(pthread_self(), main_thread);
  __atomic_add_fetch(&on_thread_calls, 1, __ATOMIC_RELEASE);
}

/* Connection of shape k in direction is_send: index 2k (send) or 2k + 1 (receive) of the set;
 * with gdr_mode its slots apart from its counters. */
static void spec_of(struct fifo_net_spec* s, const struct side* side, char* fifo, char* slots,
                    int k, int is_send) {
  int peer = 1 - side->host;
  *s = (struct fifo_net_spec){.is_send = is_send,
                              .fifo = fifo,
                              .slots = gdr_mode ? slots : NULL,
                              .nslots = shape_slots[k],
                              .slot_bytes = shape_bytes[k],
                              .peer = peer,
                              .tag = 100 * (is_send ? side->host : peer) + k,
                              .dev = k % ndevs};
  snprintf(s->desc, sizeof s->desc, "test connection %d %s host %d", k, is_send ? "to" : "from",
           peer);
}

/* Shapes k0..k1-1 each way: listens for the receiving ones, swaps the handles with the other host
 * over the pipes, takes its handles, and establishes them (the set may be running). */
static void open_conns(struct fifo_net* f, const struct side* side, char** fifo, char** slots,
                       int k0, int k1, int to_peer, int from_peer) {
  char handles[NCONN][NET_HANDLE_BYTES];
  struct fifo_net_spec s;
  size_t len = (size_t)(k1 - k0) * NET_HANDLE_BYTES;
  for (int k = k0; k < k1; k++) {
    spec_of(&s, side, fifo[2 * k + 1], slots[2 * k + 1], k, 0);
    CHECK_RES(fifo_net_listen(f, 2 * k + 1, &s, handles[k]), ncclSuccess);
  }
  CHECK_EQ(write(to_peer, handles[k0], len), (ssize_t)len);
  read_all(from_peer, handles[k0], len);
  for (int k = k0; k < k1; k++) {
    spec_of(&s, side, fifo[2 * k], slots[2 * k], k, 1);
    CHECK_RES(fifo_net_peer_handle(f, 2 * k, &s, handles[k]), ncclSuccess);
  }
  CHECK_RES(fifo_net_establish(f, 30, NULL), ncclSuccess);
}

static void start_plays(const struct side* side, struct fifo_net* f, char** fifo, char** slots,
                        struct play* p, pthread_t* t, int i0, int i1) {
  for (int i = i0; i < i1; i++) {
    p[i] = (struct play){side, f, fifo[i], slots[i], i / 2, 1 - side->host, i % 2 == 0, 0};
    CHECK_EQ(pthread_create(&t[i], NULL, play_main, &p[i]), 0);
  }
}

/* One host: on every shape k, connection 2k sends to the other host and 2k + 1 receives from it.
 * With gdr_mode the slots are apart from the counters (fifo holds the counters only) and the
 * choice of MONEL_NET_GDR (auto) must take GPU memory on the wrapped network.
 * Exit status: 0 all steps sent and checked; 3 the set failed as the kill test expects. */
static int run_host(const struct side* side, int to_peer, int from_peer) {
  struct fifo_net* f = NULL;
  char *fifo[2 * NCONN], *slots[2 * NCONN];
  int peer = 1 - side->host, first = side->first_conns ? side->first_conns : NCONN, at = -1;
  setenv("MONEL_HOST_ID", side->host ? "b" : "a", 1);
  main_thread = pthread_self();
  const struct net* net = the_net();
  if (gdr_mode) {
    int gdr = 0;
    const char* why = NULL;
    CHECK_RES(fifo_net_gdr(net, 0, &gdr, &why), ncclSuccess);
    CHECK_EQ(gdr, 1);
  }
  CHECK_RES(fifo_net_create(net, NULL, 2 * first, &f), ncclSuccess);
  for (int i = 0; i < 2 * NCONN; i++) {
    int k = i / 2;
    fifo[i] = calloc(1, gdr_mode ? GPU_FIFO_HEADER : fifo_len(k));
    slots[i] = gdr_mode ? calloc(shape_slots[k], shape_bytes[k]) : fifo[i] + GPU_FIFO_HEADER;
    CHECK(fifo[i] != NULL && slots[i] != NULL);
    if (gdr_mode) gdr_note_fifo(slots[i], fifo[i], i % 2 == 0);
  }
  open_conns(f, side, fifo, slots, 0, first, to_peer, from_peer);
  CHECK_RES(proxy_acquire(f), ncclSuccess);
  fifo_net_on_thread(f, on_thread, &on_thread_calls, 7);
  CHECK_RES(fifo_net_start(f, on_fail, NULL), ncclSuccess);
  struct play p[2 * NCONN];
  pthread_t t[2 * NCONN];
  start_plays(side, f, fifo, slots, p, t, 0, 2 * first);
  if (first < NCONN) { /* the others join the running set while the first ones stream */
    CHECK_RES(fifo_net_add(f, 2 * (NCONN - first), &at), ncclSuccess);
    CHECK_EQ(at, 2 * first);
    open_conns(f, side, fifo, slots, first, NCONN, to_peer, from_peer);
    start_plays(side, f, fifo, slots, p, t, 2 * first, 2 * NCONN);
  }
  int failed = 0;
  for (int i = 0; i < 2 * NCONN; i++) {
    pthread_join(t[i], NULL);
    if (p[i].result == 2) {
      fprintf(stderr, "host %d: connection %d waited more than %.0f s\n", side->host, i, DEADLINE);
      exit(1);
    }
    failed |= p[i].result == 1;
  }
  if (!failed) {
    CHECK_RES(fifo_net_drain(f, 30), ncclSuccess);
    CHECK_EQ(fail_calls, 0);
    /* the hook ran once, on the proxy thread: the set is the only one, with one key */
    CHECK_EQ(__atomic_load_n(&on_thread_calls, __ATOMIC_ACQUIRE), 1);
    CHECK_EQ(on_thread_here, 0);
  }
  fifo_net_free(f);
  proxy_release(f);
  for (int i = 0; i < 2 * NCONN; i++) {
    if (gdr_mode) free(slots[i]);
    free(fifo[i]);
  }
  if (!failed) {
    check_closed_clean(side->host ? "host b" : "host a");
    return 0;
  }
  CHECK_EQ(__atomic_load_n(&fail_calls, __ATOMIC_ACQUIRE), 1);
  CHECK_EQ(fail_peer, peer);
  fprintf(stderr, "host %d saw: %s\n", side->host, fail_sentence);
  CHECK(strstr(fail_sentence, "test connection") != NULL);
  CHECK(strstr(fail_sentence, "the peer process exited, was killed or its host is down") != NULL);
  const char* expect = getenv("EXPECT_SENTENCE");
  CHECK(expect == NULL || strstr(fail_sentence, expect) != NULL);
  return 3;
}

static pid_t spawn(const struct side* side, int to_peer, int from_peer) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) _exit(run_host(side, to_peer, from_peer));
  return pid;
}

static int status_of(pid_t pid) {
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Both hosts stream `steps` steps each way on every connection; first: the shapes connected
 * before the set starts (0: all; side.first_conns). */
static void both_hosts(int steps, int first) {
  int ab[2], ba[2];
  CHECK(pipe(ab) == 0 && pipe(ba) == 0);
  struct side a = {0, steps, steps, -1, 0, first}, b = {1, steps, steps, -1, 0, first};
  pid_t pa = spawn(&a, ab[1], ba[0]), pb = spawn(&b, ba[1], ab[0]);
  CHECK_EQ(status_of(pa), 0);
  CHECK_EQ(status_of(pb), 0);
}

/* Both hosts' sets in one process (one thread holding two ranks on different hosts, as
 * ncclCommInitAll's users do): each streams both ways, then the first set is drained and freed
 * entirely before the second (ncclCommDestroy of one comm after the other). The first close
 * cannot wait for the second's empty messages, which the second's own close would send only
 * later: it sends them itself (fifo_net.c adopt_local_senders), so neither set closes a receive
 * comm with a receive posted. */
struct half {
  struct side side;
  int to_peer, from_peer;
  struct fifo_net* f;
  char *fifo[2 * NCONN], *slots[2 * NCONN];
  struct play p[2 * NCONN];
  pthread_t t[2 * NCONN];
};

static void* half_open(void* arg) {
  struct half* h = arg;
  CHECK_RES(fifo_net_create(&counted, NULL, 2 * NCONN, &h->f), ncclSuccess);
  for (int i = 0; i < 2 * NCONN; i++) {
    h->fifo[i] = calloc(1, fifo_len(i / 2));
    CHECK(h->fifo[i] != NULL);
    h->slots[i] = h->fifo[i] + GPU_FIFO_HEADER;
  }
  open_conns(h->f, &h->side, h->fifo, h->slots, 0, NCONN, h->to_peer, h->from_peer);
  return NULL;
}

static int one_process(int steps) {
  int ab[2], ba[2];
  CHECK(pipe(ab) == 0 && pipe(ba) == 0);
  (void)the_net();
  struct half h[2] = {{.side = {0, steps, steps, -1, 0, 0}, .to_peer = ab[1], .from_peer = ba[0]},
                      {.side = {1, steps, steps, -1, 0, 0}, .to_peer = ba[1], .from_peer = ab[0]}};
  pthread_t opener[2];
  for (int k = 0; k < 2; k++) CHECK_EQ(pthread_create(&opener[k], NULL, half_open, &h[k]), 0);
  for (int k = 0; k < 2; k++) pthread_join(opener[k], NULL);
  for (int k = 0; k < 2; k++) {
    CHECK_RES(proxy_acquire(h[k].f), ncclSuccess);
    CHECK_RES(fifo_net_start(h[k].f, on_fail, NULL), ncclSuccess);
    start_plays(&h[k].side, h[k].f, h[k].fifo, h[k].slots, h[k].p, h[k].t, 0, 2 * NCONN);
  }
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 2 * NCONN; i++) {
      pthread_join(h[k].t[i], NULL);
      CHECK_EQ(h[k].p[i].result, 0);
    }
  for (int k = 0; k < 2; k++) { /* the first entirely, then the second */
    CHECK_RES(fifo_net_drain(h[k].f, 30), ncclSuccess);
    fifo_net_free(h[k].f);
    proxy_release(h[k].f);
    for (int i = 0; i < 2 * NCONN; i++) free(h[k].fifo[i]);
  }
  CHECK_EQ(__atomic_load_n(&fail_calls, __ATOMIC_ACQUIRE), 0);
  check_closed_clean("one process");
  return 0;
}

TEST(one_process_closes_one_set_after_the_other) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) _exit(one_process(500));
  CHECK_EQ(status_of(pid), 0);
}

TEST(every_byte_of_every_step) {
  both_hosts(3000, 0);
}

/* A set that grows while it runs (the GPU engine connects a peer at its first use): shape 0
 * streams both ways while shapes 1 and 2 are added, connected and started; every step of every
 * connection still arrives whole, and the close contract holds. */
TEST(connections_added_while_running) {
  both_hosts(3000, 1);
}

/* GPUDirect RDMA: every byte of every step as above, the slots apart and registered as CUDA
 * memory, and no tail before its receive's flush (test_fifo_net_gdr.h). */
TEST(gdr_flush_before_tail) {
  gdr_mode = 1;
  both_hosts(600, 0);
}

/* Both at once, as a peer connected at its first use with GPUDirect RDMA: connections whose slots
 * are apart join the running set, registered as CUDA memory, each receive flushed before its
 * tail. */
TEST(gdr_connections_added_while_running) {
  gdr_mode = 1;
  both_hosts(600, 1);
}

/* MONEL_NET_GDR in a child: the choice (1 GPU memory, 0 host memory) or "error N", on a network
 * whose device 0 advertises ptr (NET_PTR_*) and cuda_copy. */
static struct net_props fake_props;
static ncclResult_t fake_get_properties(int dev, struct net_props* p) {
  *p = fake_props;
  return ncclSuccess;
}

static void expect_gdr(const char* value, int ptr, int cuda_copy, const char* want) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    if (value)
      setenv("MONEL_NET_GDR", value, 1);
    else
      unsetenv("MONEL_NET_GDR");
    param_reload();
    struct net n = net_tcp;
    fake_props = (struct net_props){.ptr_support = ptr, .cuda_copy = cuda_copy};
    n.get_properties = fake_get_properties;
    int gdr = -1;
    const char* why = NULL;
    char buf[256];
    ncclResult_t res = fifo_net_gdr(&n, 0, &gdr, &why);
    int k = res == ncclSuccess ? snprintf(buf, sizeof buf, "%d", gdr)
                               : snprintf(buf, sizeof buf, "error %d", (int)res);
    if (res == ncclSuccess && (why == NULL || why[0] == '\0')) _exit(2);
    _exit(write(fds[1], buf, (size_t)k) == k ? 0 : 2);
  }
  close(fds[1]);
  char got[256];
  ssize_t k = read(fds[0], got, sizeof got - 1);
  got[k > 0 ? k : 0] = '\0';
  close(fds[0]);
  CHECK_EQ(status_of(pid), 0);
  printf("MONEL_NET_GDR=%s, pointers 0x%x, cuda_copy %d: %s\n", value ? value : "(unset)", ptr,
         cuda_copy, got);
  CHECK(strcmp(got, want) == 0);
}

TEST(gdr_choice) {
  const int host = NET_PTR_HOST, cuda = NET_PTR_HOST | NET_PTR_CUDA;
  expect_gdr(NULL, cuda, 0, "1"); /* auto: GPUDirect RDMA where the device advertises it */
  expect_gdr("auto", cuda, 0, "1");
  expect_gdr("auto", host, 0, "0");
  expect_gdr("auto", host, 1, "0"); /* copies through the host are no reason by themselves */
  expect_gdr("1", cuda, 0, "1");
  expect_gdr("1", host, 1, "1");       /* forced: UCX's cuda_copy over TCP */
  expect_gdr("1", host, 0, "error 5"); /* nothing can register GPU memory: ncclInvalidUsage */
  expect_gdr("0", cuda, 0, "0");
  expect_gdr("yes", cuda, 0, "error 5");
  expect_gdr("", cuda, 0, "1"); /* empty is unset: auto */
}

/* Kills b once the receiving side's first connection got 200 steps, long before the end: a's
 * connections fail, the sentence names b, and a's threads leave their waits. */
static void kill_b(struct side* a, struct side* b, int sig[2]) {
  int ab[2], ba[2];
  CHECK(pipe(ab) == 0 && pipe(ba) == 0);
  pid_t pa = spawn(a, ab[1], ba[0]), pb = spawn(b, ba[1], ab[0]);
  char byte = 0;
  CHECK_EQ(read(sig[0], &byte, 1), 1);
  CHECK_EQ(kill(pb, SIGKILL), 0);
  CHECK_EQ(status_of(pb), 128 + SIGKILL);
  CHECK_EQ(status_of(pa), 3);
}

TEST(peer_killed_while_both_stream) {
  int sig[2];
  CHECK(pipe(sig) == 0);
  struct side a = {0, 1 << 30, 1 << 30, -1, 0, 0}, b = {1, 1 << 30, 1 << 30, sig[1], 200, 0};
  kill_b(&a, &b, sig);
}

/* a only receives: the failure is found on a receive the kernel waits for. */
TEST(sender_killed_while_receiver_waits) {
  int sig[2];
  CHECK(pipe(sig) == 0);
  struct side a = {0, 0, 1 << 30, sig[1], 200, 0}, b = {1, 1 << 30, 0, -1, 0, 0};
  setenv("EXPECT_SENTENCE", "closed while a step was awaited", 1);
  kill_b(&a, &b, sig);
}

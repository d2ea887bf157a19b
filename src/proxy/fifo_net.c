/* SPDX-License-Identifier: BSD-3-Clause */
/* NET connections of GPU FIFOs: see fifo_net.h.
 *
 * Per connection the proxy keeps two step counters: posted (sends or receives handed to the
 * network) and done (completed, in order). A sender posts while posted < tail (kernel) and
 * publishes head = done; a receiver posts while posted < head (kernel) + nslots and publishes
 * tail = done. Requests complete in order per connection, so only the oldest is tested.
 * Receives are posted ahead of need, so the peer closing its side after its last step fails the
 * oldest one; that is a failure only while the kernel wants a step not received (the FIFO's want
 * word).
 *
 *   sender kernel --tail--> [mirror slots] --isend--> network --irecv--> [FIFO slots] --tail-->
 *   receiver kernel; receiver kernel --head--> (gates irecv);  isend done --head--> sender kernel
 *
 * The kernels publish tail and head after a system-scope fence; the proxy reads them with
 * acquire loads and publishes its own counters with release stores.
 *
 * Slots in device memory (spec.slots): a receive that completed is flushed first (iflush, then
 * its request tested on later passes; a receive of no bytes needs none), and only then are its
 * size and the tail published, so a kernel that sees the tail reads the bytes the NIC wrote.
 * The completed receive's request is gone while its flush is in flight, so the flush fits in
 * the receives' NET_MAX_REQUESTS. */
#include "proxy/fifo_net.h"
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/check.h"
#include "util/param.h"
#include "device/gpu_fifo.h"
#include "os/auth.h"

/* Testing a receive costs the network a system call (TCP reads its control socket), and a comm
 * keeps one receive connection per channel and peer, most of them idle. A receive connection is
 * tested on every pass while it is hot (its kernel wants a step not received yet, or a step came
 * within the last HOT_PASSES passes: a stream in flight), and every COLD_EVERY passes otherwise,
 * so that data sent ahead is still taken in and a peer that went away is still noticed. A pass
 * then costs a system call per connection in use, not per connection, and a small operation's
 * latency is about a pass per hop. */
#define HOT_PASSES 4096
#define COLD_EVERY 32

struct fnet_conn {
  struct fifo_net_spec s;
  int used;
  int have_handle;
  char handle[NET_HANDLE_BYTES];
  void* listen;
  void* comm; /* send or receive comm */
  void* mh;
  int live; /* connected and registered: the proxy thread moves its steps (set under lock) */
  uint64_t posted, done;
  uint64_t hot_until;  /* the pass until which a receive connection is tested on every pass */
  ncclResult_t closed; /* a receive failed with ncclRemoteError: the peer went away */
  int ended; /* irecv failed with ncclRemoteError: the receives posted before may still complete */
  void* req[GPU_FIFO_MAX_SLOTS];
  int flushing; /* slots in device memory: receive `done` completed with `got` bytes; its flush
                   (request `flush`, NULL when none is in flight) is awaited */
  size_t got;
  void* flush;
  int adopted; /* a sender whose empty messages a receiver of this process sent at its close
                  (adopt_local_senders): the proxy thread and its own close leave it alone */
};

struct fifo_net {
  const struct net* net;
  unsigned char key[AUTH_KEY_BYTES]; /* if keyed */
  int keyed;
  int nconns;
  struct fnet_conn* conns;
  fifo_net_fail_fn fail;
  void* fail_arg;
  int failed; /* atomic */
  int started;
  int drained;              /* fifo_net_drain found every step sent: the kernels are over */
  void (*on_thread)(void*); /* fifo_net_on_thread */
  void* on_thread_arg;
  int on_thread_key;
  int adopting;          /* atomic: connections of this set another set's close is driving */
  struct fifo_net* next; /* in the started list */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fifo_net* started; /* sets the proxy thread progresses */
static int nstarted;             /* atomic */
static uint64_t pass;            /* passes of fifo_net_progress, under lock */
static int bound_key = -1;       /* on_thread key of the set the thread progressed last */

static uint64_t* word(const struct fnet_conn* c, size_t off) {
  return (uint64_t*)(c->s.fifo + off);
}

static char* slot0(const struct fnet_conn* c) {
  return c->s.slots != NULL ? c->s.slots : c->s.fifo + GPU_FIFO_HEADER;
}

static char* slot(const struct fnet_conn* c, uint64_t step) {
  return slot0(c) + (size_t)(step % (uint64_t)c->s.nslots) * c->s.slot_bytes;
}

ncclResult_t fifo_net_gdr(const struct net* net, int dev, int* gdr, const char** why) {
  const char* want = param_str(PARAM_NET_GDR);
  struct net_props p;
  *gdr = 0;
  *why = "staged through pinned host memory (MONEL_NET_GDR=0)";
  if (strcmp(want, "0") == 0) return ncclSuccess;
  if (strcmp(want, "1") != 0 && strcmp(want, "auto") != 0) {
    WARN("MONEL_NET_GDR=%s: the values are auto (GPU memory where the network does GPUDirect "
         "RDMA), 1 (GPU memory whenever the network can register it) and 0 (pinned host memory)",
         want);
    return ncclInvalidUsage;
  }
  NCCLCHECK(net->get_properties(dev, &p));
  int direct = (p.ptr_support & NET_PTR_CUDA) != 0;
  if (direct) {
    *gdr = 1;
    *why = "in GPU memory: the network's device reads and writes it (GPUDirect RDMA)";
  } else if (strcmp(want, "1") == 0 && p.cuda_copy) {
    *gdr = 1;
    *why = "in GPU memory (MONEL_NET_GDR=1), which the network copies through host memory itself";
  } else if (strcmp(want, "1") == 0) {
    WARN("MONEL_NET_GDR=1 asks for the GPU network FIFOs' slots in GPU memory, but network %s "
         "(device %d: %s) cannot register GPU memory: set MONEL_NET_GDR=auto or 0, or use a "
         "network that takes CUDA memory (UCX built with CUDA, or a plugin advertising "
         "NCCL_PTR_CUDA)",
         net->name, dev, p.name);
    return ncclInvalidUsage;
  } else {
    *why = "staged through pinned host memory: the network's device does not advertise GPU "
           "memory (NET_PTR_CUDA)";
  }
  return ncclSuccess;
}

ncclResult_t fifo_net_create(const struct net* net, const unsigned char* key, int nconns,
                             struct fifo_net** out) {
  struct fifo_net* f = NULL;
  *out = NULL;
  NCCLCALLOC(f, 1);
  f->net = net;
  if (key != NULL) memcpy(f->key, key, sizeof f->key);
  f->keyed = key != NULL;
  f->nconns = nconns;
  if (nconns > 0) {
    f->conns = calloc((size_t)nconns, sizeof *f->conns);
    if (f->conns == NULL) {
      WARN("out of host memory for %d network connections", nconns);
      free(f);
      return ncclSystemError;
    }
  }
  *out = f;
  return ncclSuccess;
}

ncclResult_t fifo_net_add(struct fifo_net* f, int n, int* first) {
  struct fnet_conn* c = NULL;
  *first = f->nconns;
  if (n <= 0) return ncclSuccess;
  pthread_mutex_lock(&lock); /* the proxy thread reads the array of a started set under it */
  c = realloc(f->conns, sizeof *c * (size_t)(f->nconns + n));
  if (c != NULL) {
    memset(c + f->nconns, 0, sizeof *c * (size_t)n);
    f->conns = c;
    f->nconns += n;
  }
  pthread_mutex_unlock(&lock);
  if (c == NULL) {
    WARN("out of host memory for %d more network connections", n);
    return ncclSystemError;
  }
  return ncclSuccess;
}

static ncclResult_t take(struct fifo_net* f, int i, const struct fifo_net_spec* spec,
                         struct fnet_conn** out) {
  if (i < 0 || i >= f->nconns || f->conns[i].used || spec->nslots < 1 ||
      spec->nslots > GPU_FIFO_MAX_SLOTS) {
    WARN("network connection %d (%s) is not a valid entry of a set of %d, or has %d slots (1 to "
         "%d)",
         i, spec->desc, f->nconns, spec->nslots, GPU_FIFO_MAX_SLOTS);
    return ncclInternalError;
  }
  struct fnet_conn* c = &f->conns[i];
  c->s = *spec;
  c->used = 1;
  *out = c;
  return ncclSuccess;
}

ncclResult_t fifo_net_listen(struct fifo_net* f, int i, const struct fifo_net_spec* spec,
                             void* handle) {
  struct fnet_conn* c = NULL;
  NCCLCHECK(take(f, i, spec, &c));
  memset(handle, 0, NET_HANDLE_BYTES);
  /* a connection's messages are its slots (and empty ones at close) */
  ncclResult_t res = net_listen_sized(f->net, spec->dev, f->keyed ? f->key : NULL, spec->slot_bytes,
                                      handle, &c->listen);
  if (res == ncclSuccess) memcpy(c->handle, handle, NET_HANDLE_BYTES); /* names the connection */
  if (res != ncclSuccess)
    WARN("could not listen for %s on network device %d of %s", spec->desc, spec->dev, f->net->name);
  return res;
}

ncclResult_t fifo_net_peer_handle(struct fifo_net* f, int i, const struct fifo_net_spec* spec,
                                  const void* handle) {
  struct fnet_conn* c = NULL;
  NCCLCHECK(take(f, i, spec, &c));
  memcpy(c->handle, handle, NET_HANDLE_BYTES);
  c->have_handle = 1;
  return ncclSuccess;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One pass of connect/accept over the connections not up yet; *pending counts them. */
static ncclResult_t establish_pass(struct fifo_net* f, int* pending) {
  *pending = 0;
  for (int i = 0; i < f->nconns; i++) {
    struct fnet_conn* c = &f->conns[i];
    if (!c->used || c->comm != NULL) continue;
    ncclResult_t res =
        c->s.is_send ? f->net->connect(c->s.dev, f->keyed ? f->key : NULL, c->handle, &c->comm)
                     : f->net->accept(c->listen, &c->comm);
    if (res != ncclSuccess) {
      WARN("could not %s %s over %s: the peer is gone or unreachable (check NCCL_SOCKET_IFNAME "
           "and that every rank runs)",
           c->s.is_send ? "connect" : "accept", c->s.desc, f->net->name);
      return res;
    }
    if (c->comm == NULL) ++*pending;
  }
  return ncclSuccess;
}

ncclResult_t fifo_net_establish(struct fifo_net* f, int timeout_s, const int* stop) {
  for (int i = 0; i < f->nconns; i++) {
    struct fnet_conn* c = &f->conns[i];
    if (c->used && c->s.is_send && !c->have_handle) {
      WARN("%s has no handle from its receiver", c->s.desc);
      return ncclInternalError;
    }
  }
  double deadline = now_s() + (timeout_s > 0 ? timeout_s : 1);
  int pending = 1;
  while (pending) {
    NCCLCHECK(establish_pass(f, &pending));
    if (pending == 0) break;
    if (stop != NULL && __atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
      WARN("%d network connections were still being set up when the communicator was aborted",
           pending);
      return ncclRemoteError;
    }
    if (now_s() > deadline) {
      for (int i = 0; i < f->nconns; i++) {
        struct fnet_conn* c = &f->conns[i];
        if (c->used && c->comm == NULL) {
          WARN("%s was not up after %d s (%d connections still waiting): the peer did not %s; "
               "check that it runs and can reach this host (NCCL_SOCKET_IFNAME)",
               c->s.desc, timeout_s, pending, c->s.is_send ? "accept" : "connect");
          break;
        }
      }
      return ncclRemoteError;
    }
    sched_yield();
  }
  for (int i = 0; i < f->nconns; i++) {
    struct fnet_conn* c = &f->conns[i];
    if (!c->used || c->live) continue;
    if (c->listen) {
      (void)f->net->close_listen(c->listen);
      c->listen = NULL;
    }
    size_t bytes = (size_t)c->s.nslots * c->s.slot_bytes;
    int cuda = c->s.slots != NULL;
    if (f->net->reg_mr(c->comm, slot0(c), bytes, cuda ? NET_PTR_CUDA : NET_PTR_HOST, &c->mh) !=
        ncclSuccess) {
      WARN("could not register the %zu bytes of the slots of %s (%s memory) with %s", bytes,
           c->s.desc, cuda ? "GPU" : "host", f->net->name);
      return ncclSystemError;
    }
    INFO(LOG_INIT | LOG_NET, "%s via NET/%s/%d%s", c->s.desc, f->net->name, c->s.dev,
         cuda ? "/GDRDMA" : "");
  }
  pthread_mutex_lock(&lock); /* a started set's new connections join the proxy's passes */
  for (int i = 0; i < f->nconns; i++) f->conns[i].live |= f->conns[i].used;
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

void fifo_net_on_thread(struct fifo_net* f, void (*fn)(void*), void* arg, int key) {
  f->on_thread = fn;
  f->on_thread_arg = arg;
  f->on_thread_key = key;
}

ncclResult_t fifo_net_start(struct fifo_net* f, fifo_net_fail_fn fail, void* arg) {
  f->fail = fail;
  f->fail_arg = arg;
  pthread_mutex_lock(&lock);
  f->next = started;
  started = f;
  f->started = 1;
  bound_key = -1; /* the thread may be new: its hooks run again */
  __atomic_add_fetch(&nstarted, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

int fifo_net_failed(const struct fifo_net* f) {
  return __atomic_load_n(&f->failed, __ATOMIC_ACQUIRE);
}

/* Steps of connection c still to send: 0 for a receive connection. */
static uint64_t unsent(const struct fnet_conn* c) {
  if (!c->live || !c->s.is_send) return 0;
  uint64_t tail = __atomic_load_n(word(c, GPU_FIFO_TAIL), __ATOMIC_ACQUIRE);
  return tail - __atomic_load_n(word(c, GPU_FIFO_HEAD), __ATOMIC_ACQUIRE);
}

ncclResult_t fifo_net_drain(struct fifo_net* f, int timeout_s) {
  double deadline = now_s() + (timeout_s > 0 ? timeout_s : 1);
  for (int i = 0; i < f->nconns; i++) {
    while (unsent(&f->conns[i]) > 0 && !fifo_net_failed(f)) {
      if (now_s() > deadline) {
        WARN("%s still had %llu steps to send after %d s", f->conns[i].s.desc,
             (unsigned long long)unsent(&f->conns[i]), timeout_s);
        return ncclInternalError;
      }
      sched_yield();
    }
  }
  f->drained = !fifo_net_failed(f);
  return ncclSuccess;
}

/* ---- closing (net.h's close contract: no receive posted when a receive comm is closed) ------
 * A connection has no way back from its receiver to its sender, so both sides keep to one count
 * instead of a goodbye: a receiver never has a receive posted for a step beyond head + nslots
 * (head: the steps its kernel consumed), and once both kernels are over head is the sender's
 * last step S. Its receives posted in all are then at most S + nslots; at close it posts the
 * missing ones, up to exactly S + nslots, and the sender, after its last step, sends nslots
 * empty messages with the connection's tag: each of those receives completes with one. The
 * receiver's proxy thread may take some of those empty messages before its own close (as steps
 * no kernel will read), which changes neither count. Both sides post first and then wait (at
 * most CLOSE_DRAIN_S), so two ranks closing at once do not wait on each other. */
#define CLOSE_DRAIN_S 5.0

static int cap(const struct fnet_conn* c);

/* One step of closing c (*goal: a sender's empty messages still to send, a receiver's
 * receives posted in all at the end); 1 while it has more to do, 0 when quiet, -1 when the
 * network reported an error (the peer is gone). */
static int close_step(struct fifo_net* f, struct fnet_conn* c, uint64_t* goal) {
  if (c->flushing) { /* a receive's flush still in flight: it ends first */
    int done = 0;
    size_t size = 0;
    if (f->net->test(c->flush, &done, &size) != ncclSuccess) return -1;
    if (!done) return 1;
    c->flush = NULL;
    c->flushing = 0;
    c->done++;
  }
  while ((c->s.is_send ? *goal > 0 : c->posted < *goal) && c->posted - c->done < (uint64_t)cap(c)) {
    void* req = NULL;
    void* data = slot(c, c->posted);
    size_t size = c->s.slot_bytes;
    int tag = c->s.tag;
    ncclResult_t res = c->s.is_send
                           ? f->net->isend(c->comm, data, 0, tag, c->mh, NULL, &req)
                           : f->net->irecv(c->comm, 1, &data, &size, &tag, &c->mh, NULL, &req);
    if (res != ncclSuccess) return -1;
    if (req == NULL) break; /* not now */
    c->req[c->posted % (uint64_t)c->s.nslots] = req;
    c->posted++;
    if (c->s.is_send) (*goal)--;
  }
  while (c->done < c->posted) {
    int done = 0;
    size_t size = 0;
    void** r = &c->req[c->done % (uint64_t)c->s.nslots];
    if (f->net->test(*r, &done, &size) != ncclSuccess) return -1;
    if (!done) return 1;
    *r = NULL;
    c->done++;
  }
  return c->s.is_send ? *goal > 0 : c->posted < *goal;
}

/* A receive connection the network reported broken (its peer was killed, or closed without
 * sending its empty messages) still holds receives no step needs: the kernels are over. Each is
 * tested until the network ends it, done or failed (Monel's networks end a failed request in
 * test; a plugin may keep it: the connection failed, which the close contract allows); bounded
 * by `deadline`. */
static void end_posted(struct fifo_net* f, struct fnet_conn* c, double deadline) {
  while (c->done < c->posted && now_s() < deadline) {
    void** r = &c->req[c->done % (uint64_t)c->s.nslots];
    int done = 0;
    size_t size = 0;
    if (f->net->test(*r, &done, &size) != ncclSuccess || done) {
      *r = NULL;
      c->done++;
    } else {
      sched_yield();
    }
  }
}

/* Receive connections of f whose sender is a connection of another set of this process, still
 * started, with every step its kernel posted handed to the network (its kernels are over; the
 * same listen handle and tag name the pair): f's close completes those sends and sends that
 * sender's empty messages too, as its own close would,
 * so that f's receives end now even when that set's owner closes it only after this close
 * returns (one thread destroying its comms one after the other, as ncclCommInitAll's users do).
 * An adopted sender is left alone by the proxy thread and by its owner's close; its owner's
 * fifo_net_free waits until `adopting` is back to 0. adopted[i]/owners[i]: the sender of f's
 * connection i, or NULL. */
static void adopt_local_senders(struct fifo_net* f, struct fnet_conn** adopted,
                                struct fifo_net** owners) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < f->nconns; i++) {
    struct fnet_conn* c = &f->conns[i];
    if (!c->live || c->s.is_send || c->ended || c->closed) continue;
    for (struct fifo_net* o = started; o != NULL && adopted[i] == NULL; o = o->next) {
      if (o == f || __atomic_load_n(&o->failed, __ATOMIC_ACQUIRE)) continue;
      for (int j = 0; j < o->nconns; j++) {
        struct fnet_conn* sc = &o->conns[j];
        if (!sc->live || !sc->s.is_send || sc->adopted || sc->ended || !sc->have_handle ||
            sc->s.tag != c->s.tag || memcmp(sc->handle, c->handle, NET_HANDLE_BYTES) != 0 ||
            __atomic_load_n(word(sc, GPU_FIFO_TAIL), __ATOMIC_ACQUIRE) != sc->posted)
          continue;
        sc->adopted = 1;
        __atomic_add_fetch(&o->adopting, 1, __ATOMIC_ACQ_REL);
        adopted[i] = sc;
        owners[i] = o;
        break;
      }
    }
  }
  pthread_mutex_unlock(&lock);
}

/* Ends every connection's posted receives with its peer (bounded: a peer that is late, e.g. a
 * comm of this process destroyed after this one, leaves them to close_recv; one that is gone,
 * to end_posted). */
static void close_drain(struct fifo_net* f) {
  size_t n = (size_t)f->nconns;
  uint64_t* fills = calloc(n, sizeof *fills);
  char* gone = calloc(n, 1); /* the network reported the peer gone */
  struct fnet_conn** adopted = calloc(n, sizeof *adopted);
  struct fifo_net** owners = calloc(n, sizeof *owners);
  uint64_t* afills = calloc(n, sizeof *afills); /* adopted senders' empty messages to send */
  if (fills == NULL || gone == NULL || adopted == NULL || owners == NULL || afills == NULL) {
    free(fills);
    free(gone);
    free(adopted);
    free(owners);
    free(afills);
    return;
  }
  adopt_local_senders(f, adopted, owners);
  for (size_t i = 0; i < n; i++)
    if (adopted[i] != NULL) afills[i] = (uint64_t)adopted[i]->s.nslots;
  for (int i = 0; i < f->nconns; i++) {
    struct fnet_conn* c = &f->conns[i];
    gone[i] = c->live && (c->ended || c->closed); /* found gone while running */
    if (!c->live || c->ended || c->closed) continue;
    fills[i] = (uint64_t)c->s.nslots; /* a sender's empty messages */
    if (!c->s.is_send) fills[i] += __atomic_load_n(word(c, GPU_FIFO_HEAD), __ATOMIC_ACQUIRE);
  }
  double deadline = now_s() + CLOSE_DRAIN_S;
  for (int busy = 1; busy && now_s() < deadline;) {
    busy = 0;
    for (int i = 0; i < f->nconns; i++) {
      struct fnet_conn* c = &f->conns[i];
      if (!c->live || c->ended || c->closed) continue;
      int st = close_step(f, c, &fills[i]);
      if (st > 0) {
        busy = 1;
      } else {
        c->ended = 1; /* quiet, or broken: nothing more to do here */
        gone[i] = st < 0;
      }
    }
    for (int i = 0; i < f->nconns; i++) {
      struct fnet_conn* sc = adopted[i];
      if (sc == NULL || sc->ended) continue;
      if (close_step(owners[i], sc, &afills[i]) > 0)
        busy = 1;
      else
        sc->ended = 1;
    }
    if (busy) sched_yield();
  }
  for (int i = 0; i < f->nconns; i++) /* its owner may close it now */
    if (adopted[i] != NULL) {
      adopted[i]->ended = 1;
      __atomic_sub_fetch(&owners[i]->adopting, 1, __ATOMIC_ACQ_REL);
    }
  deadline = now_s() + CLOSE_DRAIN_S;
  for (int i = 0; i < f->nconns; i++) {
    struct fnet_conn* c = &f->conns[i];
    if (gone[i] && !c->s.is_send && !c->flushing && c->done < c->posted) end_posted(f, c, deadline);
  }
  free(fills);
  free(gone);
  free(adopted);
  free(owners);
  free(afills);
}

void fifo_net_free(struct fifo_net* f) {
  if (f == NULL) return;
  pthread_mutex_lock(&lock); /* the proxy thread holds it for a whole pass */
  if (f->started) {
    for (struct fifo_net** p = &started; *p; p = &(*p)->next)
      if (*p == f) {
        *p = f->next;
        break;
      }
    __atomic_sub_fetch(&nstarted, 1, __ATOMIC_RELEASE);
    f->started = 0;
  }
  pthread_mutex_unlock(&lock);
  while (__atomic_load_n(&f->adopting, __ATOMIC_ACQUIRE) > 0) sched_yield(); /* a close ends */
  if (f->drained && !fifo_net_failed(f)) close_drain(f);
  for (int i = 0; i < f->nconns; i++) {
    struct fnet_conn* c = &f->conns[i];
    if (c->mh) (void)f->net->dereg_mr(c->comm, c->mh);
    if (c->comm) (void)(c->s.is_send ? f->net->close_send(c->comm) : f->net->close_recv(c->comm));
    if (c->listen) (void)f->net->close_listen(c->listen);
  }
  free(f->conns);
  free(f);
}

/* A connection broke: stop the set and tell its owner once. */
static void broke(struct fifo_net* f, struct fnet_conn* c, const char* what, ncclResult_t res) {
  if (__atomic_exchange_n(&f->failed, 1, __ATOMIC_ACQ_REL)) return;
  char msg[384];
  snprintf(msg, sizeof msg, "%s failed (%s, %s) after %llu of its steps%s", c->s.desc, what,
           ncclGetErrorString(res), (unsigned long long)c->done,
           res == ncclRemoteError ? ": the peer process exited, was killed or its host is down"
                                  : "");
  if (f->fail) f->fail(f->fail_arg, c->s.peer, msg);
}

static int cap(const struct fnet_conn* c) {
  return c->s.nslots < NET_MAX_REQUESTS ? c->s.nslots : NET_MAX_REQUESTS;
}

/* Receive `done` into device memory completed with c->got bytes: its flush, posted on the first
 * call. 1 once it is done (or none was needed), 0 not yet, -1 on error (reported). */
static int flushed(struct fifo_net* f, struct fnet_conn* c) {
  ncclResult_t res = ncclSuccess;
  if (!c->flushing) {
    void* data = slot(c, c->done);
    size_t size = c->got;
    c->flushing = 1;
    c->flush = NULL;
    if (size > 0 && f->net->iflush != NULL)
      res = f->net->iflush(c->comm, 1, &data, &size, &c->mh, &c->flush);
  }
  if (res == ncclSuccess && c->flush != NULL) {
    int done = 0;
    size_t size = 0;
    res = f->net->test(c->flush, &done, &size);
    if (res == ncclSuccess && !done) return 0;
    c->flush = NULL;
  }
  if (res != ncclSuccess) {
    broke(f, c, "the flush of a receive into GPU memory failed", res);
    return -1;
  }
  c->flushing = 0;
  return 1;
}

/* Completes the oldest requests in order; *moved when one did. 0 on error (reported). */
static int complete(struct fifo_net* f, struct fnet_conn* c, int* moved) {
  while (c->done < c->posted) {
    if (!c->flushing) { /* the oldest request: test it */
      int done = 0;
      size_t size = 0;
      void** r = &c->req[c->done % (uint64_t)c->s.nslots];
      ncclResult_t res = f->net->test(*r, &done, &size);
      if (res == ncclRemoteError && !c->s.is_send) {
        c->closed = res; /* a failure only if the kernel wants more (progress_recv) */
        return 1;
      }
      if (res != ncclSuccess) {
        broke(f, c, c->s.is_send ? "a send did not complete" : "a receive did not complete", res);
        return 0;
      }
      if (!done) break;
      *r = NULL;
      c->got = size;
    }
    if (!c->s.is_send && c->s.slots != NULL) { /* its bytes in device memory: flushed first */
      int fl = flushed(f, c);
      if (fl <= 0) return fl == 0;
    }
    if (!c->s.is_send) {
      __atomic_store_n(word(c, GPU_FIFO_SIZES + 8 * (c->done % (uint64_t)c->s.nslots)),
                       (uint64_t)c->got, __ATOMIC_RELAXED);
      __atomic_store_n(word(c, GPU_FIFO_TAIL), c->done + 1, __ATOMIC_RELEASE);
    } else {
      __atomic_store_n(word(c, GPU_FIFO_HEAD), c->done + 1, __ATOMIC_RELEASE);
    }
    c->done++;
    *moved = 1;
  }
  return 1;
}

static int progress_send(struct fifo_net* f, struct fnet_conn* c, int* moved) {
  uint64_t tail = __atomic_load_n(word(c, GPU_FIFO_TAIL), __ATOMIC_ACQUIRE);
  while (c->posted < tail && c->posted - c->done < (uint64_t)cap(c)) {
    uint64_t k = c->posted % (uint64_t)c->s.nslots;
    uint64_t size = __atomic_load_n(word(c, GPU_FIFO_SIZES + 8 * k), __ATOMIC_RELAXED);
    if (size > c->s.slot_bytes) {
      broke(f, c, "a slot's recorded size exceeds the slot", ncclInternalError);
      return 0;
    }
    void* req = NULL;
    ncclResult_t res =
        f->net->isend(c->comm, slot(c, c->posted), (size_t)size, c->s.tag, c->mh, NULL, &req);
    if (res != ncclSuccess) {
      broke(f, c, "a send could not be posted", res);
      return 0;
    }
    if (req == NULL) break;
    c->req[k] = req;
    c->posted++;
    *moved = 1;
  }
  return complete(f, c, moved);
}

/* A peer that closed its side after its last step is no failure; a kernel waiting for a step
 * that will not come is. A network may see the close while posting a receive, after it took the
 * last steps into receives posted before (or while their bytes are still on their way): those
 * are tested on every pass until each completed or one failed. */
static int progress_recv(struct fifo_net* f, struct fnet_conn* c, int* moved) {
  if (c->closed) {
    if (__atomic_load_n(word(c, GPU_FIFO_WANT), __ATOMIC_ACQUIRE) <= c->done) return 1;
    broke(f, c, "the connection closed while a step was awaited", c->closed);
    return 0;
  }
  uint64_t head = __atomic_load_n(word(c, GPU_FIFO_HEAD), __ATOMIC_ACQUIRE);
  /* never beyond head + nslots: the close counts on it (close_drain) */
  while (!c->ended && c->posted < head + (uint64_t)c->s.nslots &&
         c->posted - c->done < (uint64_t)cap(c)) {
    void* data = slot(c, c->posted);
    size_t size = c->s.slot_bytes;
    int tag = c->s.tag;
    void* req = NULL;
    ncclResult_t res = f->net->irecv(c->comm, 1, &data, &size, &tag, &c->mh, NULL, &req);
    if (res == ncclRemoteError) {
      c->ended = 1;
      break;
    }
    if (res != ncclSuccess) {
      broke(f, c, "a receive could not be posted", res);
      return 0;
    }
    if (req == NULL) break;
    c->req[c->posted % (uint64_t)c->s.nslots] = req;
    c->posted++;
    *moved = 1;
  }
  if (__atomic_load_n(word(c, GPU_FIFO_WANT), __ATOMIC_ACQUIRE) > c->done)
    c->hot_until = pass + HOT_PASSES;
  if (!c->ended && pass >= c->hot_until && pass % COLD_EVERY != 0) return 1;
  uint64_t before = c->done;
  int ok = complete(f, c, moved);
  if (c->done != before) c->hot_until = pass + HOT_PASSES;
  if (ok && c->ended && c->done == c->posted && !c->closed) c->closed = ncclRemoteError;
  return ok;
}

int fifo_net_progress(void) {
  int moved = 0;
  if (__atomic_load_n(&nstarted, __ATOMIC_ACQUIRE) == 0) return 0;
  pthread_mutex_lock(&lock);
  pass++;
  for (struct fifo_net* f = started; f; f = f->next) {
    if (__atomic_load_n(&f->failed, __ATOMIC_ACQUIRE)) continue;
    if (f->on_thread != NULL && f->on_thread_key != bound_key) {
      f->on_thread(f->on_thread_arg);
      bound_key = f->on_thread_key;
    }
    for (int i = 0; i < f->nconns; i++) {
      struct fnet_conn* c = &f->conns[i];
      if (!c->live || c->adopted) continue;
      int ok = c->s.is_send ? progress_send(f, c, &moved) : progress_recv(f, c, &moved);
      if (!ok) break;
    }
  }
  pthread_mutex_unlock(&lock);
  return moved;
}

int fifo_net_active(void) {
  return __atomic_load_n(&nstarted, __ATOMIC_ACQUIRE) > 0;
}

void fifo_net_forget(void) {
  pthread_mutex_init(&lock, NULL);
  started = NULL;
  nstarted = 0;
  pass = 0;
  bound_key = -1;
}

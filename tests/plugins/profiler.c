/* SPDX-License-Identifier: BSD-3-Clause */
/* A test profiler plugin, built once per version (PROF_VERSION 1..7). It reads every descriptor
 * by the byte offsets NCCL's documentation gives, keeps a record per event and checks the tree
 * as events arrive: parents are live records of the right type, every start gets one stop,
 * group states come in order, Coll sequence numbers count up per function from 0. NetPlugin
 * events (those of tests/net/plugin_v8.c built as TestV10) come under an open ProxyStep, at most
 * one per step, with that plugin's id and data, one update (v4+) and a stop while the step is
 * still open, and only when the mask asks for them. At finalize nothing of that comm may be
 * open. test_plugin_count tells the totals. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "abi.h"

enum {
  GROUP = 1,
  COLL = 2,
  P2P = 4,
  PROXY_OP = 8,
  PROXY_STEP = 0x10,
  NET_PLUGIN = 0x80,
  GROUP_API = 0x100,
  COLL_API = 0x200,
  P2P_API = 0x400
};

struct rec {
  uint32_t magic;
  int type, open, states;
  struct ctx* ctx;
  /* P2p: its peer and whether it sends. ProxyOp: its members, the steps started and stopped,
   * the open ones. ProxyStep: its op, the states seen (bits 1 << (state - 8)). */
  int peer, is_send, nsteps, chunk, started, stopped, nopen;
  int net;    /* ProxyStep: NetPlugin events under it */
  void* data; /* NetPlugin: the net plugin's data */
  struct rec* parent;
};
struct ctx {
  int rank, open;
  uint64_t next_seq[16];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int mask_bits, starts[16], stops[16], inits, finals, bad, tagged, states23, states24;
static long long op_steps, send_bytes, recv_bytes; /* ProxyOp nSteps; ProxyStep transSize */
static int net_events[2];                          /* NetPlugin under receive, send steps */
static char last_bad[256];

static int bit(int type) {
  for (int i = 0; i < 16; i++)
    if (type == 1 << i) return i;
  return 15;
}

static void fail(const char* why) {
  bad++;
  snprintf(last_bad, sizeof last_bad, "%s", why);
}

#ifdef COMBO /* built beside the tuner in one library, which has test_plugin_count */
#define test_plugin_count test_profiler_count
#endif
int test_plugin_count(const char* what);
int test_plugin_count(const char* what) {
  int r = -1;
  pthread_mutex_lock(&lock);
  if (strncmp(what, "start", 5) == 0)
    r = starts[atoi(what + 5) & 15];
  else if (strncmp(what, "stop", 4) == 0)
    r = stops[atoi(what + 4) & 15];
  else if (strcmp(what, "init") == 0)
    r = inits;
  else if (strcmp(what, "finalize") == 0)
    r = finals;
  else if (strcmp(what, "bad") == 0) {
    r = bad;
    if (bad) fprintf(stderr, "profiler plugin: last problem: %s\n", last_bad);
  } else if (strcmp(what, "tagged") == 0)
    r = tagged;
  else if (strcmp(what, "state23") == 0)
    r = states23;
  else if (strcmp(what, "state24") == 0)
    r = states24;
  else if (strcmp(what, "opsteps") == 0)
    r = (int)op_steps;
  else if (strcmp(what, "sendbytes") == 0)
    r = (int)send_bytes;
  else if (strcmp(what, "recvbytes") == 0)
    r = (int)recv_bytes;
  else if (strcmp(what, "netsend") == 0 || strcmp(what, "netrecv") == 0)
    r = net_events[what[3] == 's'];
  pthread_mutex_unlock(&lock);
  return r;
}

#define AT(d, off, type) (*(type const*)((const char*)(d) + (off)))

static struct rec* as_rec(const void* p, int type) {
  struct rec* r = (struct rec*)p;
  return r != NULL && r->magic == 0x9e7e && r->type == type ? r : NULL;
}

/* NCCL's function strings; the index, or -1 for any other. */
static int func_index(const char* f) {
  static const char* const names[] = {"AllGather", "AllReduce", "AlltoAll", "Broadcast",
                                      "Gather",    "Recv",      "Reduce",   "ReduceScatter",
                                      "Scatter",   "Send"};
  for (int i = 0; f && i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(f, names[i]) == 0) return i;
  return -1;
}
#define known_func(f) (func_index(f) >= 0)

/* Coll: its parent (CollApi from v5, else Group), its group, function and sequence number. */
static void check_coll(struct ctx* c, const void* d, void* parent) {
  int v = PROF_VERSION;
  if (!as_rec(parent, v >= 5 ? COLL_API : GROUP)) fail("Coll: parent is not its API event/group");
  if (v >= 5 && !as_rec(AT(d, 104, void*), GROUP)) fail("Coll: parentGroup is not a Group");
  if (v >= 5 && as_rec(AT(d, 104, void*), GROUP) && !as_rec(AT(d, 104, void*), GROUP)->open)
    fail("Coll: its Group is closed");
  uint64_t seq = v >= 4 ? AT(d, 24, uint64_t) : AT(d, 40, uint64_t);
  int fid = 0;
  if (v == 1) {
    fid = AT(d, 48, uint8_t);
    if (fid > 10) fail("Coll v1: function id out of range");
  } else {
    const char* f = v >= 4 ? AT(d, 32, const char*) : AT(d, 48, const char*);
    if (!known_func(f)) fail("Coll: unknown function string");
    fid = func_index(f) & 15;
  }
  if (v >= 2 && v <= 3 && AT(d, 24, const char*) != NULL) fail("Coll v2/v3: name is not NULL");
  if (seq != c->next_seq[fid]) fail("Coll: sequence number out of order");
  c->next_seq[fid] = seq + 1;
  if (v == 7 && AT(d, 128, uint64_t) == 77) tagged++;
}

/* P2p: the peer and the direction, by each version's offsets. */
static void p2p_fields(const void* d, struct rec* r) {
  int v = PROF_VERSION;
  if (v == 1) {
    r->peer = AT(d, 72, int), r->is_send = AT(d, 40, uint8_t) == 6;
    return;
  }
  const char* f = v >= 4 ? AT(d, 24, const char*) : AT(d, 40, const char*);
  r->peer = v >= 4 ? AT(d, 56, int) : AT(d, 72, int);
  r->is_send = f != NULL && strcmp(f, "Send") == 0;
}

/* ProxyOp (the same members in every version): its parent is the open Coll or P2p of the
 * operation (a P2p's peer and direction), it belongs to this process, a transfer with another
 * rank of at least one step of the slot size the test sets, or for a collective of the chunk
 * size a tuner gave (TEST_STEP_BYTES). */
static void check_proxy_op(struct ctx* c, const void* d, struct rec* parent, struct rec* r) {
  const char* slot = getenv("MONEL_CPU_SLOT_SIZE");
  r->is_send = AT(d, 44, int), r->peer = AT(d, 32, int), r->nsteps = AT(d, 36, int);
  r->chunk = AT(d, 40, int);
  if (parent == NULL || (parent->type != COLL && parent->type != P2P) || !parent->open)
    fail("ProxyOp: parent is not an open Coll or P2p");
  else if (parent->type == P2P && (parent->peer != r->peer || parent->is_send != r->is_send))
    fail("ProxyOp: peer or direction is not its P2p's");
  if (AT(d, 24, int) != (int)getpid()) fail("ProxyOp: pid");
  if (r->peer < 0 || r->peer == c->rank || (r->is_send != 0 && r->is_send != 1))
    fail("ProxyOp: peer or isSend");
  const char* step = parent && parent->type == COLL ? getenv("TEST_STEP_BYTES") : NULL;
  int chunk = step ? atoi(step) : slot ? atoi(slot) : r->chunk;
  if (r->nsteps < 1 || r->chunk != chunk) fail("ProxyOp: nSteps or chunkSize");
  if (AT(d, 28, uint8_t) > 1) fail("ProxyOp: channelId");
  op_steps += r->nsteps;
}

/* ProxyStep: under an open ProxyOp, numbered in order from 0, no more than its nSteps. */
static void check_proxy_step(const void* d, struct rec* parent) {
  if (parent == NULL || parent->type != PROXY_OP || !parent->open) {
    fail("ProxyStep: parent is not an open ProxyOp");
    return;
  }
  if (AT(d, 24, int) != parent->started || parent->started >= parent->nsteps)
    fail("ProxyStep: step number out of order or beyond nSteps");
  parent->started++, parent->nopen++;
}

/* NetPlugin (v3+): under an open ProxyStep, the first one there, with the test net plugin's id
 * (type 0x7e, version 1) and its data (magic, and the direction of the step's op). */
static void check_net(const void* d, struct rec* parent, struct rec* r) {
  int64_t id = AT(d, 24, int64_t);
  const void* data = AT(d, 32, void*);
  r->data = (void*)data;
  if (!(mask_bits & NET_PLUGIN)) fail("NetPlugin: the mask does not ask for it");
  if (parent == NULL || parent->type != PROXY_STEP || !parent->open) {
    fail("NetPlugin: parent is not an open ProxyStep");
    return;
  }
  if (id != ((int64_t)0x7e << 16 | 1)) fail("NetPlugin: id");
  if (data == NULL || AT(data, 0, uint32_t) != 0x7e57e7u ||
      AT(data, 4, int) != parent->parent->is_send)
    fail("NetPlugin: data is not the net plugin's for the step's direction");
  if (parent->net++ != 0) fail("NetPlugin: a second event under one ProxyStep");
  net_events[parent->parent->is_send == 1]++;
}

static void check(struct ctx* c, int type, const void* d, void* parent) {
  int v = PROF_VERSION;
  switch (type) {
  case GROUP_API:
    if (parent != NULL || AT(d, 28, int) < 1) fail("GroupApi: parent or depth");
    break;
  case COLL_API:
  case P2P_API: {
    struct rec* g = as_rec(parent, GROUP_API);
    if (g == NULL || !g->open) fail("API event: parent is not an open GroupApi");
    if (!known_func(AT(d, 24, const char*))) fail("API event: unknown function string");
    if (type == COLL_API && v == 7 && AT(d, 72, uint64_t) == 77) tagged++;
    break;
  }
  case GROUP:
    if (parent != NULL) fail("Group: parent is not NULL");
    break;
  case COLL:
    check_coll(c, d, parent);
    break;
  case P2P:
    if (!as_rec(parent, v >= 5 ? P2P_API : GROUP)) fail("P2p: parent is not its API event/group");
    if (v >= 5 && !as_rec(AT(d, 64, void*), GROUP)) fail("P2p: parentGroup is not a Group");
    break;
  case PROXY_OP:
  case PROXY_STEP:
  case NET_PLUGIN:
    break; /* start_event checks them with their records */
  default:
    fail("an event type the CPU engine does not emit");
  }
}

static result_t start_event(void* ctx, void** handle, void* d) {
  struct ctx* c = ctx;
  int type = PROF_VERSION >= 5 ? (int)AT(d, 0, uint64_t) : AT(d, 0, uint8_t);
  void* parent = AT(d, 8, void*);
  struct rec* r = calloc(1, sizeof *r);
  if (getenv("TEST_PROF_SLOW")) usleep(2000); /* a slow plugin must not change any result */
  pthread_mutex_lock(&lock);
  check(c, type, d, parent);
  if ((type == COLL || type == P2P) && c->rank >= 0 && AT(d, 16, int) != c->rank)
    fail("event: rank");
  *r = (struct rec){.magic = 0x9e7e, .type = type, .open = 1, .ctx = c};
  r->parent = parent;
  if (type == P2P) p2p_fields(d, r);
  if (type == PROXY_OP) check_proxy_op(c, d, parent, r);
  if (type == PROXY_STEP) check_proxy_step(d, parent);
  if (type == NET_PLUGIN) check_net(d, parent, r);
  c->open++;
  starts[bit(type)]++;
  pthread_mutex_unlock(&lock);
  *handle = r;
  return 0;
}

static result_t stop_event(void* h) {
  struct rec* r = h;
  pthread_mutex_lock(&lock);
  if (r == NULL || r->magic != 0x9e7e || !r->open) {
    fail("stop of an event that is not open");
  } else {
    r->open = 0;
    r->ctx->open--;
    stops[bit(r->type)]++;
    if (r->type == GROUP_API && r->states != 2) fail("GroupApi stopped before states 23, 24");
    if (r->type == NET_PLUGIN) {
      if (r->states != (PROF_VERSION >= 4)) fail("NetPlugin stopped without its one update");
      if (as_rec(r->parent, PROXY_STEP) == NULL || !r->parent->open)
        fail("NetPlugin stopped after its ProxyStep");
    }
    if (r->type == PROXY_STEP) {
      struct rec* op = r->parent;
      /* send: SendWait (9); receive: RecvWait (10), then RecvGPUWait (12) */
      if (r->states != (op->is_send ? 1 << 1 : (1 << 2) | (1 << 4)))
        fail("ProxyStep stopped without its states");
      if (!op->open) fail("ProxyStep stopped after its ProxyOp");
      op->stopped++, op->nopen--;
    }
    if (r->type == PROXY_OP && (mask_bits & (PROXY_STEP | 0x80)) &&
        (r->started != r->nsteps || r->stopped != r->nsteps))
      fail("ProxyOp stopped before all its nSteps steps started and stopped");
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* A ProxyStep's state: in NCCL's order for its direction, with transSize from v4 (v1-v3: the
 * arguments zeroed): a send's bytes, a posted receive's slot, a received slot's bytes. */
static void step_state(struct rec* r, int state, const void* args) {
  struct rec* op = r->parent;
  size_t size = args ? AT(args, 0, size_t) : (size_t)-1;
  int have = r->states, want_prev = state == 9 ? 0 : state == 10 ? 0 : state == 12 ? 1 << 2 : -1;
  if (want_prev < 0 || have != want_prev || (state == 9) != (op->is_send == 1))
    fail("ProxyStep states out of order");
  r->states |= 1 << (state - 8);
  if (args == NULL || (PROF_VERSION <= 3 && size != 0)) fail("ProxyStep state: arguments");
  if (PROF_VERSION <= 3) return;
  /* RecvWait: the room of the slot it receives into; then at most a step's bytes */
  const char* slot = getenv("MONEL_CPU_SLOT_SIZE");
  size_t room = slot ? (size_t)atoll(slot) : (size_t)op->chunk;
  if (state == 10 ? size != room : size == 0 || size > (size_t)op->chunk)
    fail("ProxyStep state: transSize");
  if (state == 9) send_bytes += (long long)size;
  if (state == 12) recv_bytes += (long long)size;
}

static result_t record_state(void* h, int state, void* args) {
  struct rec* r = h;
  pthread_mutex_lock(&lock);
  if (r != NULL && r->magic == 0x9e7e && r->type == PROXY_STEP && r->open)
    step_state(r, state, args);
  else if (r != NULL && r->magic == 0x9e7e && r->type == NET_PLUGIN && r->open) {
    /* NetPluginUpdate, with the data the net plugin gave (v3 gets no states) */
    if (PROF_VERSION < 4 || state != 21 || args == NULL || AT(args, 0, void*) != r->data ||
        r->states++ != 0)
      fail("NetPlugin state: not one update with the plugin's data");
  } else if (r == NULL || r->type != GROUP_API || !r->open || args != NULL)
    fail("state: not GroupApi");
  else if (state == 23 && r->states == 0)
    r->states = 1, states23++;
  else if (state == 24 && r->states == 1)
    r->states = 2, states24++;
  else
    fail("GroupApi states out of order");
  pthread_mutex_unlock(&lock);
  return 0;
}

static result_t finalize(void* ctx) {
  struct ctx* c = ctx;
  pthread_mutex_lock(&lock);
  if (c->open != 0) fail("finalize with events open");
  finals++;
  pthread_mutex_unlock(&lock);
  free(c);
  return 0;
}

static result_t begin(void** ctx, int* mask, int rank) {
  struct ctx* c = calloc(1, sizeof *c);
  const char* m = getenv("TEST_PROF_MASK");
  c->rank = rank;
  pthread_mutex_lock(&lock);
  inits++;
  mask_bits = m ? (int)strtol(m, NULL, 0) : 0xfff;
  *mask = mask_bits;
  pthread_mutex_unlock(&lock);
  *ctx = c;
  return getenv("TEST_PROF_FAIL_INIT") ? 3 : 0;
}

#if PROF_VERSION <= 3
/* v1-v3 init has no rank: the events' rank is not checked */
static result_t init(void** ctx, int* mask) {
  return begin(ctx, mask, -1);
}
#elif PROF_VERSION == 4
static result_t init(void** ctx, int* mask, const char* name, uint64_t hash, int nnodes, int nranks,
                     int rank, logger_t log) {
  (void)name;
  if (hash == 0 || nnodes < 1 || nranks < 1 || rank < 0 || rank >= nranks || log == NULL) bad++;
  return begin(ctx, mask, rank);
}
#else
static result_t init(void** ctx, uint64_t id, int* mask, const char* name, int nnodes, int nranks,
                     int rank, logger_t log) {
  (void)name;
  if (id == 0 || nnodes < 1 || nranks < 1 || rank < 0 || rank >= nranks || log == NULL) bad++;
  return begin(ctx, mask, rank);
}
#endif

#define TABLE(v) ncclProfiler_v##v
#define NAME(v)  "TestProfiler-v" #v
#define EXPORT(v)                                                                                  \
  const struct {                                                                                   \
    const char* name;                                                                              \
    void* init;                                                                                    \
    void *start, *stop, *record, *finalize;                                                        \
  } TABLE(v) = {NAME(v),           (void*)init,         (void*)start_event,                        \
                (void*)stop_event, (void*)record_state, (void*)finalize}
#if PROF_VERSION == 1
EXPORT(1);
#elif PROF_VERSION == 2
EXPORT(2);
#elif PROF_VERSION == 3
EXPORT(3);
#elif PROF_VERSION == 4
EXPORT(4);
#elif PROF_VERSION == 5
EXPORT(5);
#elif PROF_VERSION == 6
EXPORT(6);
#else
EXPORT(7);
#endif

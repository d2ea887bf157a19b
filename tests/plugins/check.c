/* SPDX-License-Identifier: BSD-3-Clause */
/* One process of the plugin tests (tests/plugins/run): ranks as threads of this process on the
 * CPU engine run a fixed list of operations, check every result exactly, and then compare what
 * the loaded test plugin counted (its test_plugin_count, reached through the library Monel
 * opened: TEST_PLUGIN_LIB names it) with what this program did.
 *   check env NAME VALUE   the parameter NAME reads VALUE (the env plugin supplies it)
 *   check tuner            the operation list; the tuner's counts equal the calls
 *   check tuner-refused    AllReduce of 4 KB fails with ncclInvalidUsage and the sentence
 *   check profiler         the operation list; the profiler's event tree (profiler.c) is whole
 *   check profiler-net V   ranks as processes on two hosts (0, 1 | 2: MONEL_HOST_ID), so that
 *                          the ring's links 1 -> 2 and 2 -> 0 cross the network: the ProxyOp and
 *                          ProxyStep events each rank reports equal the slot arithmetic; with
 *                          TEST_NET_LIB (the test net plugin of interface v10 that
 *                          NCCL_NET_PLUGIN loads), its NetPlugin events: one per isend and
 *                          irecv the net plugin got with a profiler handle, every slot's send
 *                          one of them, every slot's receive but those posted before their
 *                          operation began (at most MONEL_CPU_SLOTS per operation) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "nccl.h"

#define NRANKS 3

/* The operations: (collective, bytes). AllReduce of 1-64 KB is what the test tuner rule forces. */
static const struct op {
  const char* coll;
  size_t bytes;
} ops[] = {{"AllReduce", 8},       {"AllReduce", 4096},     {"AllReduce", 65536},
           {"AllReduce", 1 << 20}, {"Broadcast", 4096},     {"Reduce", 4096},
           {"AllGather", 4096},    {"ReduceScatter", 4096}, {"SendRecv", 4096}};
#define NOPS (int)(sizeof ops / sizeof ops[0])

static int (*count_fn)(const char*);

static int count(const char* what) {
  return count_fn ? count_fn(what) : -1;
}

/* The plugin Monel loaded; hold: open it first, so that it stays loaded after Monel closes it
 * (a profiler is closed with the last comm). */
static int find_plugin_opt(int hold) {
  const char* lib = getenv("TEST_PLUGIN_LIB");
  void* h = lib ? dlopen(lib, RTLD_NOW | (hold ? 0 : RTLD_NOLOAD)) : NULL;
  if (h) count_fn = (int (*)(const char*))dlsym(h, "test_plugin_count");
  if (count_fn == NULL) {
    fprintf(stderr, "FAIL: the test plugin %s is not loaded in this process\n", lib ? lib : "?");
    return 1;
  }
  return 0;
}

static int find_plugin(void) {
  return count_fn ? 0 : find_plugin_opt(0);
}

static int check_floats(const float* got, size_t n, float want_base, float step, const char* w) {
  for (size_t i = 0; i < n; i++) {
    float want = want_base + step * (float)(i % 7);
    if (got[i] != want) {
      fprintf(stderr, "FAIL %s: element %zu is %g, expected %g\n", w, i, got[i], want);
      return 1;
    }
  }
  return 0;
}

/* Every rank's input element i is rank + 1 + (i % 7); results follow from that exactly. */
static int run_op(ncclComm_t comm, int rank, const struct op* o, float* in, float* out) {
  size_t n = o->bytes / sizeof(float);
  int bad = 0;
  for (size_t i = 0; i < n * NRANKS; i++) in[i] = (float)(rank + 1) + (float)(i % 7);
  memset(out, 0, n * NRANKS * sizeof(float));
  float sum = NRANKS * (NRANKS + 1) / 2.0f;
  if (strcmp(o->coll, "AllReduce") == 0) {
    MP_CHECK(ncclAllReduce(in, out, n, ncclFloat32, ncclSum, comm, NULL));
    bad = check_floats(out, n, sum, NRANKS, o->coll);
  } else if (strcmp(o->coll, "Broadcast") == 0) {
    MP_CHECK(ncclBroadcast(in, out, n, ncclFloat32, 1, comm, NULL));
    bad = check_floats(out, n, 2, 1, o->coll);
  } else if (strcmp(o->coll, "Reduce") == 0) {
    MP_CHECK(ncclReduce(in, out, n, ncclFloat32, ncclSum, 0, comm, NULL));
    bad = rank == 0 ? check_floats(out, n, sum, NRANKS, o->coll) : 0;
  } else if (strcmp(o->coll, "AllGather") == 0) {
    MP_CHECK(ncclAllGather(in, out, n, ncclFloat32, comm, NULL));
    for (int r = 0; r < NRANKS && !bad; r++)
      bad = check_floats(out + r * n, n, (float)(r + 1), 1, o->coll);
  } else if (strcmp(o->coll, "ReduceScatter") == 0) {
    for (size_t i = 0; i < n * NRANKS; i++) in[i] = (float)(rank + 1) + (float)(i % n % 7);
    MP_CHECK(ncclReduceScatter(in, out, n, ncclFloat32, ncclSum, comm, NULL));
    bad = check_floats(out, n, sum, NRANKS, o->coll);
  } else { /* a ring of Send/Recv in one group */
    MP_CHECK(ncclGroupStart());
    MP_CHECK(ncclSend(in, n, ncclFloat32, (rank + 1) % NRANKS, comm, NULL));
    MP_CHECK(ncclRecv(out, n, ncclFloat32, (rank + NRANKS - 1) % NRANKS, comm, NULL));
    MP_CHECK(ncclGroupEnd());
    bad = check_floats(out, n, (float)((rank + NRANKS - 1) % NRANKS + 1), 1, o->coll);
  }
  return bad;
}

static int ops_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  float* in = malloc((1 << 20) * NRANKS);
  float* out = malloc((1 << 20) * NRANKS);
  int bad = 0;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  for (int i = 0; i < NOPS && !bad; i++) bad = run_op(comm, rank, &ops[i], in, out);
  MP_CHECK(ncclCommDestroy(comm));
  free(in);
  free(out);
  return bad;
}

static int expect(const char* what, int want) {
  int got = count(what);
  if (got == want) return 0;
  fprintf(stderr, "FAIL: the plugin counted %s = %d, expected %d\n", what, got, want);
  return 1;
}

/* NCCL's function ids of the collectives in ops[], and how often the list calls each. */
static int func_id(const char* c) {
  return strcmp(c, "Broadcast") == 0       ? 0
         : strcmp(c, "Reduce") == 0        ? 1
         : strcmp(c, "AllGather") == 0     ? 2
         : strcmp(c, "ReduceScatter") == 0 ? 3
         : strcmp(c, "AllReduce") == 0     ? 4
                                           : 5;
}

static int check_tuner(int version) {
  int fails = 0, per[8] = {0}, colls = 0, in_rule = 0, rule_func = -1;
  size_t rule_min = 0, rule_max = 0; /* the test tuner's rule: func,min,max,... */
  const char* rule = getenv("TEST_TUNER_RULE");
  if (rule == NULL || sscanf(rule, "%d,%zu,%zu", &rule_func, &rule_min, &rule_max) != 3)
    rule_func = -1;
  if (mp_run_threads(NRANKS, ops_main, NULL) != 0) return 1;
  if (find_plugin()) return 1;
  for (int i = 0; i < NOPS; i++) {
    int f = func_id(ops[i].coll);
    if (f <= 4) per[f]++, colls++;
    if (f == rule_func && ops[i].bytes >= rule_min && ops[i].bytes <= rule_max) in_rule++;
  }
  for (int f = 0; f < 8; f++) {
    char what[16];
    snprintf(what, sizeof what, "calls%d", f);
    fails += expect(what, per[f] * NRANKS); /* point-to-point never reaches the tuner */
  }
  fails += expect("init", NRANKS) + expect("finalize", NRANKS) + expect("bad", 0);
  fails += expect("forced", in_rule * NRANKS);
  fails += expect("chunk", version >= 6 ? colls * NRANKS : 0);
  if (!fails)
    printf("PASS tuner v%d: %d collectives x %d ranks asked, %d forced\n", version, colls, NRANKS,
           in_rule * NRANKS);
  return fails != 0;
}

static int refused_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  float buf[1024];
  memset(buf, 0, sizeof buf);
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  ncclResult_t res = ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, NULL);
  const char* why = ncclGetLastError(comm);
  int ok = res == ncclInvalidUsage && strstr(why, "does not run here") != NULL;
  if (!ok) fprintf(stderr, "FAIL rank %d: AllReduce returned %d: %s\n", rank, (int)res, why);
  ncclCommDestroy(comm);
  return !ok;
}

/* The operation list, then one AllReduce tagged 77 through ncclAllReduceConfig. */
static int prof_ops_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  float* in = malloc((1 << 20) * NRANKS);
  float* out = malloc((1 << 20) * NRANKS);
  int bad = 0;
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  cfg.userProfilerTag = 77;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  for (int i = 0; i < NOPS && !bad; i++) bad = run_op(comm, rank, &ops[i], in, out);
  for (int i = 0; i < 16; i++) in[i] = (float)rank;
  MP_CHECK(ncclAllReduceConfig(in, out, 16, ncclFloat32, ncclSum, comm, NULL, &cfg));
  for (int i = 0; i < 16 && !bad; i++) bad = out[i] != (float)(NRANKS * (NRANKS - 1) / 2);
  MP_CHECK(ncclCommDestroy(comm));
  free(in);
  free(out);
  return bad;
}

/* Event bits of the test plugin's counts (bit index of the type). */
enum { B_GROUP = 0, B_COLL = 1, B_P2P = 2, B_GROUP_API = 8, B_COLL_API = 9, B_P2P_API = 10 };

/* NCCL's rule, written here apart from Monel's: an event is emitted when the mask has any of the
 * bits of its line (a requested event turns its ancestors on); API events from v5 only. */
static int emitted(int mask, int bit, int version) {
  const int below = 0x8 | 0x10 | 0x40 | 0x80, ce = 0x7000;
  int any = bit == B_GROUP_API  ? 0x100 | 0x200 | 0x400 | 0x800 | 0x1 | 0x2 | 0x4 | below | ce
            : bit == B_COLL_API ? 0x200 | 0x2 | below | ce
            : bit == B_P2P_API  ? 0x400 | 0x4 | below
            : bit == B_GROUP    ? 0x1 | 0x2 | 0x4 | below
                                : (1 << bit) | below;
  if (bit >= B_GROUP_API && version < 5) return 0;
  return (mask & any) != 0;
}

static int check_profiler(int version) {
  int fails = 0, colls = 1, p2ps = 0, groups = NOPS + 1; /* +1: the tagged AllReduce */
  if (find_plugin_opt(1) || mp_run_threads(NRANKS, prof_ops_main, NULL) != 0) return 1;
  for (int i = 0; i < NOPS; i++)
    if (func_id(ops[i].coll) <= 4)
      colls++;
    else
      p2ps += 2; /* a Send and a Recv */
  const char* m = getenv("TEST_PROF_MASK");
  int mask = m ? (int)strtol(m, NULL, 0) : 0xfff; /* what the test plugin sets */
  const struct {
    int bit, n;
  } ev[] = {{B_GROUP, groups},     {B_COLL, colls},     {B_P2P, p2ps},
            {B_GROUP_API, groups}, {B_COLL_API, colls}, {B_P2P_API, p2ps}};
  for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
    char what[16];
    int want = emitted(mask, ev[i].bit, version) * ev[i].n * NRANKS;
    snprintf(what, sizeof what, "start%d", ev[i].bit);
    fails += expect(what, want);
    snprintf(what, sizeof what, "stop%d", ev[i].bit);
    fails += expect(what, want);
  }
  int states = emitted(mask, B_GROUP_API, version) * groups * NRANKS;
  fails += expect("state23", states) + expect("state24", states);
  fails += expect("init", NRANKS) + expect("finalize", NRANKS) + expect("bad", 0);
  int tags = version == 7 ? emitted(mask, B_COLL_API, version) + emitted(mask, B_COLL, version) : 0;
  fails += expect("tagged", tags * NRANKS);
  if (!fails)
    printf("PASS profiler v%d mask 0x%x: %d groups, %d collectives, %d point-to-point x %d ranks\n",
           version, mask, groups, colls, p2ps, NRANKS);
  return fails != 0;
}

/* ---- proxy events across the network ---- */

#define HOST_OF(r) ((r) < 2 ? 0 : 1)

/* Ring AllReduce of whole blocks, AllGather, Broadcast from rank 0 and a ring of Send/Recv (all
 * on the ring 0 -> 1 -> 2 -> 0, NCCL_ALGO=Ring), on slots of S bytes (MONEL_CPU_SLOT_SIZE). */
#define AR_BLOCKS 4 /* AllReduce: blocks of NRANKS slots */
#define AG_BYTES  12000
#define BC_BYTES  9000
#define SR_BYTES  10000

struct net_want {
  int ops, steps;
  long long sent, received;
  int send_steps, recv_steps; /* of the links it sends and receives over */
  int ahead;                  /* receive steps whose receive may be posted before its op */
};

/* Adds what one direction of a network link carries in the list above, for the rank that sends
 * (is_send) or receives over it: its ProxyOps, their slots and bytes; bcast: whether the
 * Broadcast moves data over it too. */
static void link_want(struct net_want* w, size_t step, size_t slot, int bcast, int is_send,
                      int nslots) {
  size_t ag_slots = (AG_BYTES + step - 1) / step, bc_slots = (BC_BYTES + step - 1) / step;
  size_t sr_slots = (SR_BYTES + slot - 1) / slot; /* point-to-point: whole slots, never tuned */
  long long bytes = 0;
  int steps0 = w->steps, op_steps[4] = {AR_BLOCKS * 2 * (NRANKS - 1), (int)ag_slots * (NRANKS - 1),
                                        bcast ? (int)bc_slots : 0, (int)sr_slots};
  /* AllReduce: 2(n-1) slots each way per block, each a full slot */
  w->ops++, w->steps += AR_BLOCKS * 2 * (NRANKS - 1);
  bytes += (long long)AR_BLOCKS * 2 * (NRANKS - 1) * (long long)step;
  /* AllGather: n-1 steps per piece of a rank's part */
  w->ops++, w->steps += (int)ag_slots * (NRANKS - 1), bytes += (long long)AG_BYTES * (NRANKS - 1);
  if (bcast) w->ops++, w->steps += (int)bc_slots, bytes += BC_BYTES;
  w->ops++, w->steps += (int)sr_slots, bytes += SR_BYTES;
  if (is_send) {
    w->sent += bytes;
    w->send_steps += w->steps - steps0;
  } else {
    w->received += bytes;
    w->recv_steps += w->steps - steps0;
    for (int i = 0; i < 4; i++) w->ahead += op_steps[i] < nslots ? op_steps[i] : nslots;
  }
}

/* The NetPlugin events of the test net plugin (TEST_NET_LIB, already loaded by Monel): the
 * profiler's equal the handles the net plugin got; every send step has one; receive steps have
 * one unless their receive was posted ahead. Without the mask bit, or with a profiler older
 * than v3, the net plugin gets no handle at all. 0 when right. */
static int net_plugin_check(const struct net_want* w, int mask, int version, int* sends,
                            int* recvs) {
  const char* lib = getenv("TEST_NET_LIB");
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  int (*net_count)(const char*) = h ? (int (*)(const char*))dlsym(h, "test_net_count") : NULL;
  if (net_count == NULL) {
    fprintf(stderr, "FAIL: the test net plugin %s is not loaded in this process\n", lib);
    return 1;
  }
  int on = (mask & 0x80) && version >= 3, psend = net_count("psend"), precv = net_count("precv");
  int fails = expect("start7", psend + precv) + expect("stop7", psend + precv) +
              expect("netsend", psend) + expect("netrecv", precv);
  *sends = psend, *recvs = precv;
  if (net_count("send") < w->send_steps || net_count("recv") < w->recv_steps) {
    fprintf(stderr, "FAIL: the net plugin queued %d sends and %d receives, fewer than the slots\n",
            net_count("send"), net_count("recv"));
    fails++;
  }
  if (psend != (on ? w->send_steps : 0)) {
    fprintf(stderr, "FAIL: %d sends with a profiler handle, expected %d\n", psend,
            on ? w->send_steps : 0);
    fails++;
  }
  if (on ? precv > w->recv_steps || precv < w->recv_steps - w->ahead : precv != 0) {
    fprintf(stderr, "FAIL: %d receives with a profiler handle, expected %d..%d\n", precv,
            on ? w->recv_steps - w->ahead : 0, on ? w->recv_steps : 0);
    fails++;
  }
  return fails;
}

static int net_main(int rank, int nranks, ncclUniqueId id, void* arg) {
  int version = *(int*)arg, bad = 0;
  char host[16];
  snprintf(host, sizeof host, "host%d", HOST_OF(rank));
  setenv("MONEL_HOST_ID", host, 1);
  if (find_plugin_opt(1)) return 1;
  size_t slot = (size_t)atoi(getenv("MONEL_CPU_SLOT_SIZE"));
  /* a collective's steps: a slot, or the chunk size a tuner gives (TEST_STEP_BYTES) */
  size_t step = getenv("TEST_STEP_BYTES") ? (size_t)atoi(getenv("TEST_STEP_BYTES")) : slot;
  size_t ar_count = AR_BLOCKS * NRANKS * step / sizeof(float);
  float* in = malloc(ar_count * sizeof(float) * NRANKS);
  float* out = malloc(ar_count * sizeof(float) * NRANKS);
  ncclComm_t comm;
  MP_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  for (size_t i = 0; i < ar_count * NRANKS; i++) in[i] = (float)(rank + 1) + (float)(i % 7);
  MP_CHECK(ncclAllReduce(in, out, ar_count, ncclFloat32, ncclSum, comm, NULL));
  bad |= check_floats(out, ar_count, NRANKS * (NRANKS + 1) / 2.0f, NRANKS, "AllReduce");
  size_t ag = AG_BYTES / sizeof(float);
  MP_CHECK(ncclAllGather(in, out, ag, ncclFloat32, comm, NULL));
  for (int r = 0; r < NRANKS && !bad; r++) {
    for (size_t i = 0; i < ag && !bad; i++)
      bad = out[r * ag + i] != (float)(r + 1) + (float)(i % 7);
    if (bad) fprintf(stderr, "FAIL AllGather: part %d\n", r);
  }
  MP_CHECK(ncclBroadcast(in, out, BC_BYTES / sizeof(float), ncclFloat32, 0, comm, NULL));
  bad |= check_floats(out, BC_BYTES / sizeof(float), 1, 1, "Broadcast");
  MP_CHECK(ncclGroupStart());
  MP_CHECK(ncclSend(in, SR_BYTES / sizeof(float), ncclFloat32, (rank + 1) % NRANKS, comm, NULL));
  MP_CHECK(ncclRecv(out, SR_BYTES / sizeof(float), ncclFloat32, (rank + NRANKS - 1) % NRANKS, comm,
                    NULL));
  MP_CHECK(ncclGroupEnd());
  bad |= check_floats(out, SR_BYTES / sizeof(float), (float)((rank + NRANKS - 1) % NRANKS + 1), 1,
                      "SendRecv");
  MP_CHECK(ncclCommDestroy(comm));
  free(in);
  free(out);
  if (bad) return 1;
  /* The ring's neighbours: a link to another host is a network one. The Broadcast from rank 0
   * runs down 0 -> 1 -> 2: every rank but 2 sends, every rank but 0 receives. */
  struct net_want w = {0};
  const char* ns = getenv("MONEL_CPU_SLOTS");
  int nslots = ns ? atoi(ns) : 8;
  int next = (rank + 1) % NRANKS, prev = (rank + NRANKS - 1) % NRANKS;
  if (HOST_OF(next) != HOST_OF(rank)) link_want(&w, step, slot, rank != NRANKS - 1, 1, nslots);
  if (HOST_OF(prev) != HOST_OF(rank)) link_want(&w, step, slot, rank != 0, 0, nslots);
  const char* m = getenv("TEST_PROF_MASK");
  int mask = m ? (int)strtol(m, NULL, 0) : 0xfff;
  int ops = (mask & (0x8 | 0x10 | 0x80)) ? w.ops : 0, steps = (mask & (0x10 | 0x80)) ? w.steps : 0;
  int bytes = version >= 4 && steps;
  int fails = expect("start3", ops) + expect("stop3", ops) + expect("start4", steps) +
              expect("stop4", steps) + expect("opsteps", ops ? w.steps : 0) +
              expect("sendbytes", bytes ? (int)w.sent : 0) +
              expect("recvbytes", bytes ? (int)w.received : 0) + expect("bad", 0);
  int nsend = 0, nrecv = 0;
  if (getenv("TEST_NET_LIB"))
    fails += net_plugin_check(&w, mask, version, &nsend, &nrecv);
  else
    fails += expect("start7", 0);
  if (!fails)
    printf("PASS profiler-net v%d mask 0x%x rank %d: %d ProxyOps, %d ProxySteps, %lld bytes sent, "
           "%lld received, NetPlugin %d send %d receive\n",
           version, mask, rank, ops, steps, bytes ? w.sent : 0, bytes ? w.received : 0, nsend,
           nrecv);
  fflush(stdout);
  return fails != 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "env") == 0 && argc == 4) {
    const char* v = NULL;
    int len = 0;
    if (ncclParamGetParameter(argv[2], &v, &len) != ncclSuccess || v == NULL ||
        strcmp(v, argv[3]) != 0) {
      fprintf(stderr, "FAIL: %s reads \"%s\", expected \"%s\"\n", argv[2], v ? v : "(null)",
              argv[3]);
      return 1;
    }
    if (mp_run_threads(NRANKS, ops_main, NULL) != 0 || find_plugin()) return 1;
    if (expect("init", 1) + expect("version", 1) + (count("supplied") < 1) + (count("get") < 10))
      return 1;
    printf("PASS env: %s=%s from the plugin, %d reads through it\n", argv[2], v, count("get"));
    return 0;
  }
  if (strcmp(mode, "profiler") == 0 && argc == 3) return check_profiler(atoi(argv[2]));
  if (strcmp(mode, "profiler-net") == 0 && argc == 3 && getenv("MONEL_CPU_SLOT_SIZE")) {
    int v = atoi(argv[2]);
    return mp_run(NRANKS, net_main, &v) != 0;
  }
  if (strcmp(mode, "ops") == 0) return mp_run_threads(NRANKS, ops_main, NULL) != 0;
  if (strcmp(mode, "tuner") == 0 && argc == 3) return check_tuner(atoi(argv[2]));
  if (strcmp(mode, "tuner-refused") == 0) {
    if (mp_run_threads(NRANKS, refused_main, NULL) != 0) return 1;
    printf("PASS tuner-refused\n");
    return 0;
  }
  fprintf(stderr,
          "usage: %s env NAME VALUE | ops | tuner VERSION | tuner-refused | profiler VERSION | "
          "profiler-net VERSION (with MONEL_CPU_SLOT_SIZE)\n",
          argv[0]);
  return 2;
}

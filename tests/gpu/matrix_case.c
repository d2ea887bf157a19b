/* SPDX-License-Identifier: BSD-3-Clause */
/* One case on one rank of the exact-check matrix (see matrix.c): which buffers the call gets, the
 * input, the call itself, the check of every region afterwards and the FAIL lines; and the loops
 * that run every case, one rank per thread or all ranks of the process in one group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "matrix_run.h"

#define MAX_FAIL_LINES 20 /* per rank; the failures are still counted */
static const char* const pattern_names[MX_SR_NPATTERNS] = {"ring", "pairs", "self"};
static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;

const char* last_error(ncclComm_t comm) {
  const char* m = ncclGetLastError(comm);
  if (!m || !*m) m = ncclGetLastError(NULL);
  return m ? m : "";
}

int is_rooted(int coll) {
  return coll == MX_BROADCAST || coll == MX_REDUCE || coll == MX_GATHER || coll == MX_SCATTER;
}

void describe(const struct tcase* t, char* out, size_t len) {
  const struct mx_case* c = &t->c;
  char var[32] = "";
  if (is_rooted(c->coll))
    snprintf(var, sizeof var, " root=%d", c->variant);
  else if (c->coll == MX_SENDRECV)
    snprintf(var, sizeof var, " pattern=%s", pattern_names[c->variant]);
  snprintf(out, len, "%s %s %s count=%zu%s %s", coll_names[c->coll],
           dtype_name((ncclDataType_t)c->dt), mx_reduces(c->coll) ? op_names[c->op] : "-", c->count,
           var, t->inplace ? "in-place" : "out-of-place");
}

/* ---- buffers of a case ---- */

static void clear_bytes(struct rank* k, char* p, size_t bytes) {
  if (opt.device)
    CK(cudaMemsetAsync(p, MX_UNTOUCHED_B, bytes, k->stream));
  else
    memset(p, MX_UNTOUCHED_B, bytes);
}

static void add_region(struct rank* k, int kind, char* base, size_t len, const char* name) {
  k->reg[k->nreg] = (struct mx_region){.base = base, .len = len, .kind = kind};
  k->reg_name[k->nreg++] = name;
}

/* The first `extent` elements of buf are used: set them and a guard after them to 0xa5, and
 * check that the guard stays so. */
static void use(struct rank* k, char* buf, size_t extent, size_t es, const char* guard_name) {
  clear_bytes(k, buf, (extent + MX_GUARD) * es);
  add_region(k, MX_UNTOUCHED, buf + extent * es, MX_GUARD, guard_name);
}

static void input_at(struct rank* k, char* base, size_t len) {
  k->in_base = base, k->in_len = len;
}

/* Where the input goes, which buffers the call gets, what is checked afterwards. */
static void plan(struct rank* k, const struct tcase* t) {
  const struct mx_case* c = &t->c;
  size_t es = dtype_size((ncclDataType_t)c->dt), n = (size_t)c->nranks, cnt = c->count;
  int r = k->rank, root = c->variant, ip = t->inplace, is_root = r == root;
  char *S = k->sbuf, *V = k->rbuf;
  k->nreg = 0, k->in_base = NULL, k->in_len = 0;
  k->sendbuff = S, k->recvbuff = V;
  switch (c->coll) {
  case MX_ALLREDUCE:
  case MX_REDUCE:
  case MX_BROADCAST: {
    int has_input = c->coll != MX_BROADCAST || is_root;
    use(k, V, cnt, es, "guard after recvbuff");
    if (ip) {
      k->sendbuff = V;
      if (has_input) input_at(k, V, cnt);
    } else if (has_input) {
      use(k, S, cnt, es, "guard after sendbuff");
      input_at(k, S, cnt);
      add_region(k, MX_INPUT, S, cnt, "sendbuff (changed)");
    }
    if (c->coll != MX_REDUCE || is_root)
      add_region(k, MX_OUTPUT, V, cnt, "output");
    else if (ip)
      add_region(k, MX_INPUT, V, cnt, "buffer of a non-root rank (changed)");
    else
      add_region(k, MX_UNTOUCHED, V, cnt, "recvbuff of a non-root rank (written)");
    break;
  }
  case MX_ALLGATHER:
  case MX_GATHER: {
    int gathers_here = c->coll == MX_ALLGATHER || is_root;
    use(k, V, n * cnt, es, "guard after recvbuff");
    if (ip && gathers_here) {
      k->sendbuff = V + (size_t)r * cnt * es;
      input_at(k, k->sendbuff, cnt);
    } else {
      use(k, S, cnt, es, "guard after sendbuff");
      input_at(k, S, cnt);
      add_region(k, MX_INPUT, S, cnt, "sendbuff (changed)");
    }
    if (gathers_here)
      add_region(k, MX_OUTPUT, V, n * cnt, "output");
    else
      add_region(k, MX_UNTOUCHED, V, n * cnt, "recvbuff of a non-root rank (written)");
    break;
  }
  case MX_REDUCESCATTER:
    if (ip) {
      use(k, V, n * cnt, es, "guard after sendbuff");
      k->sendbuff = V, k->recvbuff = V + (size_t)r * cnt * es;
      input_at(k, V, n * cnt);
    } else {
      use(k, V, cnt, es, "guard after recvbuff");
      use(k, S, n * cnt, es, "guard after sendbuff");
      input_at(k, S, n * cnt);
      add_region(k, MX_INPUT, S, n * cnt, "sendbuff (changed)");
    }
    add_region(k, MX_OUTPUT, k->recvbuff, cnt, "output");
    break;
  case MX_SCATTER:
    if (ip && is_root) {
      use(k, V, n * cnt, es, "guard after sendbuff");
      k->sendbuff = V, k->recvbuff = V + (size_t)r * cnt * es;
      input_at(k, V, n * cnt);
      add_region(k, MX_INPUT, V, n * cnt, "sendbuff (changed)");
    } else {
      use(k, V, cnt, es, "guard after recvbuff");
      if (is_root) {
        use(k, S, n * cnt, es, "guard after sendbuff");
        input_at(k, S, n * cnt);
        add_region(k, MX_INPUT, S, n * cnt, "sendbuff (changed)");
      }
    }
    add_region(k, MX_OUTPUT, k->recvbuff, cnt, "output");
    break;
  default: { /* AlltoAll, AlltoAllv, Send/Recv: out of place */
    size_t in = cnt, out = cnt;
    if (c->coll == MX_ALLTOALL || (c->coll == MX_SENDRECV && c->variant == MX_SR_PAIRS))
      in = out = n * cnt;
    if (c->coll == MX_ALLTOALLV) in = mx_vsent(c, r), out = mx_vreceived(c, r);
    use(k, V, out, es, "guard after recvbuff");
    use(k, S, in, es, "guard after sendbuff");
    input_at(k, S, in);
    add_region(k, MX_INPUT, S, in, "sendbuff (changed)");
    add_region(k, MX_OUTPUT, V, out, "output");
  }
  }
}

static ncclRedOp_t base_op(int op) {
  return op == MX_PROD  ? ncclProd
         : op == MX_MAX ? ncclMax
         : op == MX_MIN ? ncclMin
         : op == MX_AVG ? ncclAvg
                        : ncclSum;
}

/* Buffers set, input filled, PreMulSum op created: everything before the call. */
static void prepare(struct rank* k, const struct tcase* t) {
  const struct mx_case* c = &t->c;
  int premul = mx_reduces(c->coll) && (c->op == MX_PREMUL || c->op == MX_PREMUL_DEV);
  void* dscalar = premul && c->op == MX_PREMUL_DEV ? k->dscalar : NULL;
  plan(k, t);
  if (opt.device) {
    CK(mx_dev_fill(c, k->rank, k->in_base, k->in_len, dscalar, k->stream));
  } else {
    for (size_t j = 0; j < k->in_len; j++) mx_store(k->in_base, c->dt, j, mx_input(c, k->rank, j));
    if (dscalar) mx_store(dscalar, c->dt, 0, mx_encode(c->dt, mx_scalar()));
  }
  k->op = base_op(c->op), k->op_created = 0;
  if (premul) {
    ncclResult_t res;
    if (c->op == MX_PREMUL) {
      uint64_t s = mx_encode(c->dt, mx_scalar()); /* little endian: the first bytes are the value */
      res = ncclRedOpCreatePreMulSum(&k->op, &s, (ncclDataType_t)c->dt, ncclScalarHostImmediate,
                                     k->comm);
    } else {
      res = ncclRedOpCreatePreMulSum(&k->op, k->dscalar, (ncclDataType_t)c->dt, ncclScalarDevice,
                                     k->comm);
    }
    if (res != ncclSuccess)
      die("rank %d: ncclRedOpCreatePreMulSum: %s: %s", k->rank, ncclGetErrorString(res),
          last_error(k->comm));
    k->op_created = 1;
  }
}

/* The call(s) of the case for this rank. */
static ncclResult_t enqueue(struct rank* k, const struct tcase* t) {
  const struct mx_case* c = &t->c;
  ncclDataType_t dt = (ncclDataType_t)c->dt;
  size_t cnt = c->count, es = dtype_size(dt);
  int n = c->nranks, r = k->rank, root = c->variant;
  const char* sb = k->sendbuff;
  char* rb = k->recvbuff;
  ncclComm_t comm = k->comm;
  cudaStream_t s = k->stream;
  switch (c->coll) {
  case MX_ALLREDUCE:
    return ncclAllReduce(sb, rb, cnt, dt, k->op, comm, s);
  case MX_BROADCAST:
    return ncclBroadcast(sb, rb, cnt, dt, root, comm, s);
  case MX_REDUCE:
    return ncclReduce(sb, rb, cnt, dt, k->op, root, comm, s);
  case MX_ALLGATHER:
    return ncclAllGather(sb, rb, cnt, dt, comm, s);
  case MX_REDUCESCATTER:
    return ncclReduceScatter(sb, rb, cnt, dt, k->op, comm, s);
  case MX_ALLTOALL:
    return ncclAlltoAll(sb, rb, cnt, dt, comm, s);
  case MX_GATHER:
    return ncclGather(sb, rb, cnt, dt, root, comm, s);
  case MX_SCATTER:
    return ncclScatter(sb, rb, cnt, dt, root, comm, s);
  case MX_ALLTOALLV: {
    size_t nn = (size_t)n * n, *sc = k->vmat, *sd = sc + nn, *rc = sd + nn, *rd = rc + nn;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        sc[i * n + j] = mx_vcount(c, i, j), sd[i * n + j] = mx_sdispl(c, i, j);
        rc[i * n + j] = mx_vcount(c, j, i), rd[i * n + j] = mx_rdispl(c, i, j);
      }
    return p_alltoallv(sb, sc, sd, rb, rc, rd, NULL, 0, dt, comm, s);
  }
  default: { /* Send/Recv, one group per rank (nested in the caller's group in mode all) */
    ncclResult_t res = ncclGroupStart(), e = ncclSuccess;
    if (res != ncclSuccess) return res;
    for (int p = 0; p < n && e == ncclSuccess; p++) {
      int to = p, from = p;
      size_t off = (size_t)p * cnt * es;
      if (c->variant != MX_SR_PAIRS) {
        if (p > 0) break;
        to = c->variant == MX_SR_RING ? (r + 1) % n : r;
        from = c->variant == MX_SR_RING ? (r + n - 1) % n : r;
        off = 0;
      }
      e = ncclSend(sb + off, cnt, dt, to, comm, s);
      if (e == ncclSuccess) e = ncclRecv(rb + off, cnt, dt, from, comm, s);
    }
    res = ncclGroupEnd();
    return e != ncclSuccess ? e : res;
  }
  }
}

/* The rank whose output --plant-error corrupts. */
static int plant_rank(const struct tcase* t) {
  int coll = t->c.coll;
  return coll == MX_REDUCE || coll == MX_GATHER ? t->c.variant : t->c.nranks - 1;
}

static void plant(struct rank* k, const struct tcase* t) {
  if (!t->plant || k->rank != plant_rank(t)) return;
  for (int i = 0; i < k->nreg; i++) {
    if (k->reg[i].kind != MX_OUTPUT || k->reg[i].len == 0) continue;
    char* p = (char*)k->reg[i].base + k->reg[i].len / 2 * dtype_size((ncclDataType_t)t->c.dt);
    if (opt.device)
      CK(mx_dev_flip(p, k->stream));
    else
      *p ^= 0x5a;
    return;
  }
}

static void reset_results(struct rank* k) {
  if (opt.device)
    CK(cudaMemsetAsync(k->dres, 0, MX_MAXREGIONS * sizeof *k->dres, k->stream));
  else
    memset(k->hres, 0, MX_MAXREGIONS * sizeof *k->hres);
}

/* The check of every region: a kernel (results stay on the device until fetched), or a loop. The
 * device kernel keeps ~first in `first` (atomicMax over zeroed memory); so does the loop. */
static void check(struct rank* k, const struct tcase* t) {
  if (opt.device) {
    CK(mx_dev_check(&t->c, k->rank, k->reg, k->nreg, k->dres, k->stream));
    return;
  }
  for (int g = 0; g < k->nreg; g++) {
    const struct mx_region* reg = &k->reg[g];
    for (size_t i = 0; i < reg->len; i++)
      if (mx_load(reg->base, t->c.dt, i) != mx_expect(&t->c, k->rank, reg->kind, i)) {
        if (k->hres[g].bad++ == 0) k->hres[g].first = ~(unsigned long long)i;
      }
  }
}

static void fetch_results(struct rank* k) {
  if (opt.device)
    CK(cudaMemcpyAsync(k->hres, k->dres, MX_MAXREGIONS * sizeof *k->hres, cudaMemcpyDeviceToHost,
                       k->stream));
}

/* After the results are back: count, report, release the case's op. */
static void finish(struct rank* k, const struct tcase* t, int replays) {
  const struct mx_case* c = &t->c;
  if (opt.device) CK(cudaStreamSynchronize(k->stream));
  if (k->op_created) {
    ncclResult_t res = ncclRedOpDestroy(k->op, k->comm);
    if (res != ncclSuccess)
      die("rank %d: ncclRedOpDestroy: %s: %s", k->rank, ncclGetErrorString(res),
          last_error(k->comm));
    k->op_created = 0;
  }
  int failed = 0;
  size_t es = dtype_size((ncclDataType_t)c->dt);
  for (int g = 0; g < k->nreg; g++) {
    const struct mx_result* res = &k->hres[g];
    if (res->bad == 0) continue;
    failed = 1;
    if (++k->fail_lines > MAX_FAIL_LINES) {
      if (k->fail_lines == MAX_FAIL_LINES + 1)
        printf("FAIL (further FAIL lines of rank %d are not printed; failures are counted)\n",
               k->rank);
      continue;
    }
    size_t first = (size_t)~res->first;
    uint64_t want = mx_expect(c, k->rank, k->reg[g].kind, first), got = 0;
    const char* at = (const char*)k->reg[g].base + first * es;
    if (opt.device)
      CK(cudaMemcpy(&got, at, es, cudaMemcpyDeviceToHost));
    else
      memcpy(&got, at, es);
    char what[160];
    describe(t, what, sizeof what);
    printf("FAIL %s rank=%d (case #%d%s): %s: %llu of %zu elements wrong, first at [%zu]: "
           "expected 0x%0*llx got 0x%0*llx\n",
           what, k->rank, (int)(t - cases), replays > 1 ? ", after 2 graph replays" : "",
           k->reg_name[g], res->bad, k->reg[g].len, first, (int)(2 * es), (unsigned long long)want,
           (int)(2 * es), (unsigned long long)got);
  }
  k->ncase[c->coll]++;
  k->nfail[c->coll] += failed;
}

/* ---- unsupported operations and failed calls ---- */

/* An ncclInvalidUsage that says why: the engine cannot run this collective (or this setting).
 * Returns 1 when the collective is to be skipped from here on; anything else ends the run. */
static int call_failed(struct rank* k, const struct tcase* t, ncclResult_t res) {
  char what[160], who[64];
  describe(t, what, sizeof what);
  if (opt.mode == MODE_ALL)
    snprintf(who, sizeof who, "the group of all %d ranks", opt.n);
  else
    snprintf(who, sizeof who, "rank %d", k->rank);
  const char* msg = last_error(k->comm);
  if (res == ncclInvalidUsage && *msg) {
    int coll = t->c.coll;
    k->unsupported[coll] = 1;
    pthread_mutex_lock(&msg_lock);
    if (!unsup_msg[coll][0]) {
      snprintf(unsup_msg[coll], sizeof unsup_msg[coll], "%s", msg);
      printf("%s %s: ncclInvalidUsage from %s (%s): %s\n",
             opt.allow_unsupported ? "SKIP unsupported" : "FAIL unsupported", coll_names[coll], who,
             what, msg);
    }
    pthread_mutex_unlock(&msg_lock);
    return 1;
  }
  die("%s, %s: %s: %s", what, who, ncclGetErrorString(res), *msg ? msg : "(no message)");
  return 0;
}

/* A graph per rank of what was captured on its stream: the capture ends (kept in k->graph), then
 * instantiate() makes it runnable. One thread that captures on several streams ends every
 * capture before it instantiates any graph (CUDA forbids that while a capture is open). */
static void end_capture(struct rank* k, int keep) {
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamEndCapture(k->stream, &g);
  k->exec = NULL;
  k->graph = NULL;
  if (keep) {
    CK(e);
    k->graph = g;
    return;
  }
  (void)cudaGetLastError();
  if (g) CK(cudaGraphDestroy(g));
}

static void instantiate(struct rank* k) {
  CK(cudaGraphInstantiate(&k->exec, k->graph, 0));
  CK(cudaGraphDestroy(k->graph));
  k->graph = NULL;
}

static void replay(struct rank* k) {
  CK(cudaGraphLaunch(k->exec, k->stream));
}

static void drop_graph(struct rank* k) {
  if (k->exec) CK(cudaGraphExecDestroy(k->exec));
  k->exec = NULL;
}

void set_device(struct rank* k) {
  if (opt.device) CK(cudaSetDevice(k->dev));
}

void progress(struct rank* k, int idx) {
  atomic_store(&k->since_ms, (long long)(now_s() * 1000));
  atomic_store(&k->cur, idx);
}

/* ---- running the cases ---- */

static void announce(const struct tcase* t, int graph) {
  char what[160];
  describe(t, what, sizeof what);
  printf("case #%d: %s%s\n", (int)(t - cases), what, graph ? " (CUDA graph)" : "");
}

/* Mode all, one case: this thread drives every rank; the calls of all ranks go in one group. With
 * `graph`, each rank's stream is captured (buffers, input, call, check), replayed twice, and the
 * counts of both replays come back. */
static void case_all(const struct tcase* t, int graph) {
  int n = nlocal, coll = t->c.coll;
  if (opt.verbose) announce(t, graph);
  for (int r = 0; r < n; r++) {
    progress(&ranks[r], (int)(t - cases));
    set_device(&ranks[r]);
    reset_results(&ranks[r]);
    if (graph) CK(cudaStreamBeginCapture(ranks[r].stream, opt.capture));
    prepare(&ranks[r], t);
  }
  ncclResult_t res = ncclGroupStart(), first = ncclSuccess;
  if (res != ncclSuccess) die("ncclGroupStart: %s", ncclGetErrorString(res));
  for (int r = 0; r < n && first == ncclSuccess; r++) first = enqueue(&ranks[r], t);
  res = ncclGroupEnd();
  if (first == ncclSuccess) first = res;
  if (first != ncclSuccess) {
    for (int r = 0; r < n; r++) {
      set_device(&ranks[r]);
      if (graph) end_capture(&ranks[r], 0);
      if (opt.device) CK(cudaStreamSynchronize(ranks[r].stream));
      if (ranks[r].op_created) ncclRedOpDestroy(ranks[r].op, ranks[r].comm);
      ranks[r].op_created = 0;
      progress(&ranks[r], -1);
    }
    call_failed(&ranks[0], t, first);
    for (int r = 1; r < n; r++) ranks[r].unsupported[coll] = 1;
    return;
  }
  for (int r = 0; r < n; r++) {
    set_device(&ranks[r]);
    plant(&ranks[r], t);
    check(&ranks[r], t);
    if (graph) end_capture(&ranks[r], 1);
  }
  for (int r = 0; graph && r < n; r++) {
    set_device(&ranks[r]);
    instantiate(&ranks[r]);
  }
  for (int rep = 0; graph && rep < 2; rep++)
    for (int r = 0; r < n; r++) {
      set_device(&ranks[r]);
      replay(&ranks[r]);
    }
  for (int r = 0; r < n; r++) {
    set_device(&ranks[r]);
    fetch_results(&ranks[r]);
  }
  for (int r = 0; r < n; r++) {
    set_device(&ranks[r]);
    finish(&ranks[r], t, graph ? 2 : 1);
    drop_graph(&ranks[r]);
    progress(&ranks[r], -1);
  }
}

/* Modes threads and procs, one case: this thread drives one rank. */
static void case_one(struct rank* k, const struct tcase* t, int graph) {
  if (opt.verbose && k->rank == 0) announce(t, graph);
  progress(k, (int)(t - cases));
  reset_results(k);
  if (graph) CK(cudaStreamBeginCapture(k->stream, opt.capture));
  prepare(k, t);
  ncclResult_t res = enqueue(k, t);
  if (res != ncclSuccess) {
    if (graph) end_capture(k, 0);
    if (opt.device) CK(cudaStreamSynchronize(k->stream));
    if (k->op_created) ncclRedOpDestroy(k->op, k->comm);
    k->op_created = 0;
    progress(k, -1);
    call_failed(k, t, res);
    return;
  }
  plant(k, t);
  check(k, t);
  if (graph) {
    end_capture(k, 1);
    instantiate(k);
    replay(k);
    replay(k);
  }
  fetch_results(k);
  finish(k, t, graph ? 2 : 1);
  drop_graph(k);
  progress(k, -1);
}

/* With --graph, the first case of each collective that moves data also runs once without a graph
 * before its capture, as programs warm up before they capture. */
static int warm_up(int* warmed, const struct tcase* t) {
  if (!opt.graph || warmed[t->c.coll] || t->c.count == 0) return 0;
  return warmed[t->c.coll] = 1;
}

void run_all(void) {
  int warmed[MX_NCOLLS] = {0};
  for (int idx = 0; idx < ncases; idx++) {
    const struct tcase* t = &cases[idx];
    int coll = t->c.coll;
    double t0 = now_s();
    if (!ranks[0].unsupported[coll] && warm_up(warmed, t)) case_all(t, 0);
    if (!ranks[0].unsupported[coll]) case_all(t, opt.graph);
    ranks[0].secs[coll] += now_s() - t0;
  }
}

void run_one(struct rank* k) {
  int warmed[MX_NCOLLS] = {0};
  set_device(k);
  for (int idx = 0; idx < ncases; idx++) {
    const struct tcase* t = &cases[idx];
    int coll = t->c.coll;
    double t0 = now_s();
    if (!k->unsupported[coll] && warm_up(warmed, t)) case_one(k, t, 0);
    if (!k->unsupported[coll]) case_one(k, t, opt.graph);
    k->secs[coll] += now_s() - t0;
  }
}

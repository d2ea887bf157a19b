/* SPDX-License-Identifier: BSD-3-Clause */
/* The copy-engine path: AllGather, Broadcast, AlltoAll(v), Gather, Scatter and Send/Recv between
 * GPUs of one host with no thread block at all. Data moves with cudaMemcpyAsync (the GPU's copy
 * engines); ranks synchronise through 32-bit flags in memory every rank maps, written and waited
 * on by stream memory operations (cuStreamWriteValue32 / cuStreamWaitValue32, reached through
 * driver.c). Nothing waits on the host and the operations are capturable in a CUDA graph (see
 * gpu_ce_wanted for the limits that runs on GPUs imposed).
 *
 * Every operation is a list of messages (core/task.c for the point-to-point collectives; AllGather
 * and Broadcast send the input to every peer that needs it). The messages from rank w to rank p,
 * in posting order, form one byte stream of the pair, which both know the length of. Each rank
 * owns, on its GPU, a flag block and a staging buffer cut into one region of ce_region bytes per
 * reader:
 *   flags:   ready[w] (written by writer w: "my region for you is full"), done[p] (written by
 *            reader p: "I copied your region for me"), 0 at rest
 *   staging: [region for rank 0][region for rank 1]...   (destinations change per call and the
 *            writer cannot learn them without a host round trip, so the writer stages and the
 *            reader pulls)
 * A pair's stream goes in rounds of at most ce_region bytes. Round k on rank r:
 *   1. copy my next piece for each reader p into my region for p     (local device copy)
 *   2. write ready[r] = 1 at each such p                             (remote write)
 *   3. for each writer w: wait ready[w] == 1 here, set it to 0, copy w's region for me to my
 *      output (peer copy), write done[r] = 1 at w
 *   4. for each reader p of step 1: wait done[p] == 1 here, set it to 0
 *
 *   w: copy in->S_w | ready->p |            ...            | wait done[p], done[p] = 0
 *   p:                          wait ready[w], ready[w] = 0 | copy S_w->out | done->w
 *
 * Memory order: a stream executes its operations one after the other, each finished before the
 * next starts, and a stream write is preceded by a memory fence of the stream (as if by
 * __threadfence_system). So the staged bytes are visible before ready says so, the reader's
 * copy has read them before done says so, and a flag's reset (its owner's own write, before the
 * owner writes the flag that lets the peer set it again) always lands before the next set.
 * Flags return to 0 by the end of every operation: no counter outlives it, so an operation
 * captured in a CUDA graph runs the same on every replay, and eager and graph launches mix.
 *
 * Progress: every rank posts its readies before it waits on anyone's, and waits for done only
 * after it served its own readers; a pair takes part in round k on both sides or on neither, so
 * by induction on k every round completes. Operations of a comm run one after the other (as its
 * kernels do), so consecutive operations never share the flags at once.
 *
 * Cost per round: a local copy, a peer copy over NVLink by the reader's copy engine and two
 * flag trips between GPUs; rounds are not pipelined yet. No SM is used. */
#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "util/check.h"
#include "util/param.h"
#include "core/tune.h"
#include "gpu/gpu.h"
#include "util/dtype.h"

/* The flag block, before the staging buffer: a ready word per writer, then a done word per
 * reader, 32 bits each, in g->ce_flags bytes (ce_flag_bytes: a multiple of 256). */
#define CE_READY(w)   ((size_t)4 * (w))
#define CE_DONE(n, p) ((size_t)4 * ((size_t)(n) + (p)))
static size_t ce_flag_bytes(int nranks) {
  return ((size_t)8 * (size_t)nranks + 255) & ~(size_t)255;
}

struct ce_msg {
  char* buf; /* send: source; receive: destination */
  size_t bytes;
  int peer, is_send;
};

typedef CUresult (*stream_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*stream_value64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
static stream_value_fn wait_value32, write_value32;
static stream_value64_fn write_value64;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load_entry_points(void) {
  wait_value32 = (stream_value_fn)gpu_driver_fn("cuStreamWaitValue32");
  write_value32 = (stream_value_fn)gpu_driver_fn("cuStreamWriteValue32");
  write_value64 = (stream_value64_fn)gpu_driver_fn("cuStreamWriteValue64");
}

/* Every rank decides alike: the path if any rank wants it (*mode, the largest TUNE_CE_* of
 * `want`), usable if every rank can (*all_can). */
static ncclResult_t agree(struct ncclComm* comm, int want, int can, int* mode, int* all_can) {
  int n = comm->nranks, me = comm->rank, *all = NULL;
  ncclResult_t res = ncclSuccess;
  NCCLCALLOC(all, 2 * n);
  all[2 * me] = want, all[2 * me + 1] = can;
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, 2 * sizeof *all), res, out);
  *mode = TUNE_CE_OFF, *all_can = 1;
  for (int r = 0; r < n; r++) {
    if (all[2 * r] > *mode) *mode = all[2 * r];
    *all_can &= all[2 * r + 1];
  }
out:
  free(all);
  return res;
}

/* The flags and staging buffers, mapped by every rank (collective), where the path can run:
 * every rank can, on one host, with peer access. ce_ready says it was decided. */
static ncclResult_t set_up(struct ncclComm* comm, struct gpu_comm* g, int can) {
  int n = comm->nranks;
  g->ce_ready = 1;
  if (!can || g->host_fifos || gpu_net_any(comm))
    return ncclSuccess; /* one host, peer access: copies between GPUs of a host only */
  g->ce_flags = ce_flag_bytes(n);
  NCCLCALLOC(g->ce_all_set, g->ce_flags / 4);
  for (size_t i = 0; i < g->ce_flags / 4; i++) g->ce_all_set[i] = 1;
  NCCLCALLOC(g->ce_bytes, 2 * (size_t)n);
  size_t stage = (size_t)param_int(PARAM_CE_STAGE_BYTES), min_stage = (size_t)n * (64 << 10);
  if (stage < min_stage) stage = min_stage;
  if (stage > ((size_t)1 << 30)) stage = (size_t)1 << 30;
  g->ce_region = (stage / (size_t)n) & ~(size_t)255;
  NCCLCHECK(gpu_shared_alloc(comm, g, g->ce_flags + g->ce_region * n, 0, &g->ce_mem));
  return gpu_connect_ce(comm, g);
}

static int can_run(void) {
  pthread_once(&load_once, load_entry_points);
  return wait_value32 != NULL && write_value32 != NULL;
}

ncclResult_t gpu_ce_setup(struct ncclComm* comm, struct gpu_comm* g) {
  int want = param_int(PARAM_COPY_ENGINE) == 1 || comm->config.CTAPolicy == NCCL_CTA_POLICY_ZERO
                 ? TUNE_CE_ALL
             : param_int(PARAM_CE_MIN_BYTES) > 0 ? TUNE_CE_TUNED
                                                 : TUNE_CE_OFF;
  int can = can_run();
  if (comm->nranks == 1) { /* copies to myself only */
    g->ce_mode = want, g->ce_ok = can, g->ce_ready = 1;
    return ncclSuccess;
  }
  NCCLCHECK(agree(comm, want, can, &g->ce_mode, &can));
  if (g->ce_mode == TUNE_CE_OFF) return ncclSuccess; /* set up by the first call that asks */
  NCCLCHECK(set_up(comm, g, can));
  INFO(LOG_INIT | LOG_P2P, "comm %p rank %d copy-engine path: %s%s, %zu bytes per pair and round",
       (void*)comm, comm->rank, g->ce_mode == TUNE_CE_ALL ? "always" : "from MONEL_CE_MIN_BYTES",
       g->ce_ok ? "" : " but unusable (no stream memory operations or no peer access)",
       g->ce_region);
  return ncclSuccess;
}

int gpu_ce_zero(const struct task* t) {
  return t->cta_policy != 0 && ((t->cta_policy - 1) & NCCL_CTA_POLICY_ZERO) != 0;
}

int gpu_ce_runs(enum coll_kind c) {
  return c == COLL_ALLGATHER || c == COLL_BROADCAST || task_is_p2p(c);
}

/* A call with a per-call NCCL_CTA_POLICY_ZERO on a comm whose path was not set up at init (its
 * own policy did not ask for it): every rank sees the same call at the same point. */
int gpu_ce_prepare_needed(const struct ncclComm* comm, const struct task* tasks, int ntasks) {
  const struct gpu_comm* g = comm->engine_state;
  if (g == NULL || g->ce_ready) return 0;
  for (int i = 0; i < ntasks; i++)
    if (gpu_ce_zero(&tasks[i]) && gpu_ce_runs(tasks[i].coll)) return 1;
  return 0;
}

ncclResult_t gpu_ce_prepare(struct ncclComm* comm) {
  struct gpu_comm* g = comm->engine_state;
  int saved = -1, mode = TUNE_CE_OFF, can = can_run();
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  if (saved != comm->cuda_dev) CUDACHECK(cudaSetDevice(comm->cuda_dev));
  ncclResult_t res = agree(comm, TUNE_CE_OFF, can, &mode, &can);
  if (res == ncclSuccess) res = set_up(comm, g, can);
  if (saved >= 0 && saved != comm->cuda_dev) cudaSetDevice(saved);
  NCCLCHECK(res);
  comm->engine_dev_bytes = g->dev_bytes;
  INFO(LOG_INIT | LOG_P2P,
       "comm %p rank %d copy-engine path set up for a call with NCCL_CTA_POLICY_ZERO: %s, %zu "
       "bytes per pair and round",
       (void*)comm, comm->rank, g->ce_ok ? "usable" : "unusable", g->ce_region);
  return ncclSuccess;
}

void gpu_ce_free(struct gpu_comm* g) {
  gpu_shared_free(&g->ce_mem);
  free(g->ce_all_set), free(g->ce_bytes);
  g->ce_all_set = NULL, g->ce_bytes = NULL;
}

/* Raise every flag of my block on ctl_stream (which waits for no operation): a stream of mine
 * blocked on a flag goes on. The stream lowers the flag again and may wait on it once more, so the
 * caller repeats this until the operations are over (engine.c drain). What the released streams
 * copy is garbage: only for a comm that is being aborted. */
void gpu_ce_release(struct gpu_comm* g) {
  if (g->ce_mem.ptr == NULL || g->ctl_stream == NULL || g->ce_all_set == NULL) return;
  if (cudaMemcpyAsync(g->ce_mem.ptr, g->ce_all_set, g->ce_flags, cudaMemcpyHostToDevice,
                      g->ctl_stream) != cudaSuccess)
    (void)cudaGetLastError();
}

/* Bytes per peer of a collective whose size every rank knows alike, or 0. */
static size_t symmetric_bytes(const struct task* t) {
  switch (t->coll) {
  case COLL_ALLGATHER:
  case COLL_BROADCAST:
  case COLL_ALLTOALL:
  case COLL_GATHER:
  case COLL_SCATTER:
    return t->count * dtype_size(t->dtype);
  default:
    return 0;
  }
}

/* Every rank must choose alike for an operation, so the limits below look only at what every
 * rank knows: the size of AllGather, Broadcast, AlltoAll, Gather and Scatter. Send/Recv and
 * AlltoAllv (whose sizes each rank knows only for its own pairs) take the path whenever it is
 * on and not captured. The limits, from runs on 2 H200:
 *  - at most CE_MAX_ROUNDS rounds: a thread that enqueues for several GPUs (ncclCommInitAll and
 *    one group) fills the first GPU's queue before the peers' are enqueued, and 2048 rounds hung
 *    in the enqueue; 16 ran;
 *  - one round while the stream is captured: a graph of 16 rounds hung, of one round ran.
 * Not limited yet: a Send/Recv or AlltoAllv pair of more than CE_MAX_ROUNDS rounds, enqueued by
 * one thread for several GPUs (an AlltoAllv of 64 MB per pair through 32 KB regions hung there;
 * one thread or process per GPU is not affected). The fix is to send such pairs, which both
 * sides of the pair can recognise, through the kernels. */
#define CE_MAX_ROUNDS 32

/* A per-call NCCL_CTA_POLICY_ZERO the path cannot honour (the same verdict on every rank: what
 * it looks at is collective). */
static ncclResult_t zero_refused(const struct ncclComm* comm, const struct gpu_comm* g,
                                 const struct task* t) {
  if (!g->ce_ok)
    WARN("%s #%llu on rank %d: config->CTAPolicy has NCCL_CTA_POLICY_ZERO, but the copy-engine "
         "path cannot reach every rank of the comm (it needs the ranks on one host, peer access "
         "between their GPUs and a driver with stream memory operations); drop "
         "NCCL_CTA_POLICY_ZERO for this call",
         coll_name(t->coll), (unsigned long long)t->seq, comm->rank);
  else
    WARN("%s #%llu on rank %d: config->CTAPolicy has NCCL_CTA_POLICY_ZERO, but %zu bytes per peer "
         "take more than the copy-engine path's %d rounds of %zu bytes (one while the stream is "
         "captured into a CUDA graph); drop NCCL_CTA_POLICY_ZERO for this call or raise "
         "MONEL_CE_STAGE_BYTES",
         coll_name(t->coll), (unsigned long long)t->seq, comm->rank, symmetric_bytes(t),
         CE_MAX_ROUNDS, g->ce_region);
  return ncclInvalidUsage;
}

ncclResult_t gpu_ce_wanted(const struct ncclComm* comm, const struct gpu_comm* g,
                           struct task* const* tasks, int ntasks, int* yes) {
  int zero = ntasks == 1 && gpu_ce_zero(tasks[0]);
  *yes = 0;
  if (g->ce_mode == TUNE_CE_OFF && !zero)
    return ncclSuccess; /* the common case, without asking CUDA about capture */
  struct tune_ce_in in = {.mode = zero ? TUNE_CE_ALL : (enum tune_ce_mode)g->ce_mode,
                          .forced = param_int(PARAM_COPY_ENGINE) == 1,
                          .usable = g->ce_ok,
                          .bytes = ntasks == 1 ? symmetric_bytes(tasks[0]) : 0,
                          .region = g->ce_region,
                          .captured = gpu_capturing(tasks[0]->stream),
                          .max_rounds = CE_MAX_ROUNDS,
                          .min_bytes = (size_t)param_int(PARAM_CE_MIN_BYTES)};
  *yes = tune_ce_wanted(&in);
  if (zero && !*yes && tasks[0]->count > 0) return zero_refused(comm, g, tasks[0]);
  return ncclSuccess;
}

struct ce_list {
  struct gpu_comm* g;
  int n;
};

static ncclResult_t add_msg(void* ctx, const struct task* t, char* buf, size_t bytes, int peer,
                            int is_send) {
  struct ce_list* l = ctx;
  struct gpu_comm* g = l->g;
  if (bytes == 0) return ncclSuccess;
  NCCLCHECK(gpu_list_grow((void**)&g->ce_msgs, &g->ce_cap, l->n, sizeof *g->ce_msgs, t));
  g->ce_msgs[l->n++] = (struct ce_msg){buf, bytes, peer, is_send};
  return ncclSuccess;
}

/* AllGather: my input to every rank (me too), piece w from every rank to out + w * bytes.
 * Broadcast: the root's input to every rank, each rank's output from the root. */
static ncclResult_t list_coll(struct ncclComm* comm, const struct task* t, struct ce_list* l) {
  int n = comm->nranks, me = comm->rank;
  size_t bytes = t->count * dtype_size(t->dtype);
  char *in = (char*)t->sendbuff, *out = t->recvbuff;
  for (int d = 0; d < n; d++) {
    int p = (me + d) % n, w = (me - d + n) % n;
    if (t->coll == COLL_ALLGATHER) {
      NCCLCHECK(add_msg(l, t, in, bytes, p, 1));
      NCCLCHECK(add_msg(l, t, out + (size_t)w * bytes, bytes, w, 0));
    } else {
      if (me == t->root) NCCLCHECK(add_msg(l, t, in, bytes, p, 1));
      if (w == t->root) NCCLCHECK(add_msg(l, t, out, bytes, w, 0));
    }
  }
  return ncclSuccess;
}

struct self_ctx {
  const struct task* t;
  const struct ce_msg* ms;
  cudaStream_t s;
};

static void msg_view(const void* ctx, int i, struct task_msg_view* v) {
  const struct self_ctx* c = ctx;
  *v = (struct task_msg_view){c->t, c->ms[i].bytes, c->ms[i].peer, c->ms[i].is_send};
}

/* A send to myself and its receive (core's task_pair_self pairs them): one copy on the stream. */
static ncclResult_t copy_self(void* ctx, int send, int recv) {
  const struct self_ctx* c = ctx;
  const struct ce_msg *from = &c->ms[send], *to = &c->ms[recv];
  if (to->buf != from->buf)
    CUDACHECK(cudaMemcpyAsync(to->buf, from->buf, from->bytes, cudaMemcpyDefault, c->s));
  return ncclSuccess;
}

/* Copy [lo, hi) of the byte stream of the (peer, direction) messages between the user's buffers
 * and `stage` (which holds byte lo at its start): into it for sends, out of it for receives. */
static ncclResult_t copy_range(const struct ce_msg* ms, int nm, int peer, int is_send, size_t lo,
                               size_t hi, char* stage, cudaStream_t s) {
  size_t at = 0;
  for (int i = 0; i < nm && at < hi; i++) {
    const struct ce_msg* m = &ms[i];
    if (m->peer != peer || m->is_send != is_send) continue;
    size_t a = at, b = at + m->bytes;
    at = b;
    if (b <= lo) continue;
    size_t from = a > lo ? a : lo, to = b < hi ? b : hi;
    char *user = m->buf + (from - a), *st = stage + (from - lo);
    CUDACHECK(
        cudaMemcpyAsync(is_send ? st : user, is_send ? user : st, to - from, cudaMemcpyDefault, s));
  }
  return ncclSuccess;
}

static ncclResult_t mem_op(const struct task* t, int rank, int wait, cudaStream_t s, char* addr,
                           uint32_t value) {
  CUresult r =
      wait ? wait_value32((CUstream)s, (CUdeviceptr)(uintptr_t)addr, value, CU_STREAM_WAIT_VALUE_EQ)
           : write_value32((CUstream)s, (CUdeviceptr)(uintptr_t)addr, value,
                           CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r == CUDA_SUCCESS) return ncclSuccess;
  WARN("%s #%llu on rank %d: cuStream%sValue32 failed with CUDA driver error %d",
       coll_name(t->coll), (unsigned long long)t->seq, rank, wait ? "Wait" : "Write", (int)r);
  return ncclUnhandledCudaError;
}

/* The rounds of one operation (the protocol at the top). snd[q] / rcv[q]: bytes of my streams
 * to and from rank q. */
static ncclResult_t run_rounds(struct ncclComm* comm, struct gpu_comm* g, const struct task* t,
                               const struct ce_msg* ms, int nm, const size_t* snd,
                               const size_t* rcv, cudaStream_t s) {
  int n = comm->nranks, me = comm->rank;
  const size_t R = g->ce_region;
  char *mine = g->ce_mem.ptr, *stage = mine + g->ce_flags;
  size_t longest = 0;
  for (int q = 0; q < n; q++) {
    if (snd[q] > longest) longest = snd[q];
    if (rcv[q] > longest) longest = rcv[q];
  }
  for (size_t lo = 0; lo < longest; lo += R) {
    for (int d = 1; d < n; d++) {
      int q = (me + d) % n;
      if (snd[q] <= lo) continue;
      size_t hi = snd[q] - lo < R ? snd[q] : lo + R;
      NCCLCHECK(copy_range(ms, nm, q, 1, lo, hi, stage + (size_t)q * R, s));
    }
    for (int d = 1; d < n; d++) {
      int q = (me + d) % n;
      if (snd[q] > lo) NCCLCHECK(mem_op(t, me, 0, s, g->peer_ce[q] + CE_READY(me), 1));
    }
    for (int d = 1; d < n; d++) {
      int w = (me - d + n) % n;
      if (rcv[w] <= lo) continue;
      size_t hi = rcv[w] - lo < R ? rcv[w] : lo + R;
      NCCLCHECK(mem_op(t, me, 1, s, mine + CE_READY(w), 1));
      NCCLCHECK(mem_op(t, me, 0, s, mine + CE_READY(w), 0));
      NCCLCHECK(copy_range(ms, nm, w, 0, lo, hi, g->peer_ce[w] + g->ce_flags + (size_t)me * R, s));
      NCCLCHECK(mem_op(t, me, 0, s, g->peer_ce[w] + CE_DONE(n, me), 1));
    }
    for (int d = 1; d < n; d++) {
      int q = (me + d) % n;
      if (snd[q] <= lo) continue;
      NCCLCHECK(mem_op(t, me, 1, s, mine + CE_DONE(n, q), 1));
      NCCLCHECK(mem_op(t, me, 0, s, mine + CE_DONE(n, q), 0));
    }
  }
  return ncclSuccess;
}

ncclResult_t gpu_ce_run(struct ncclComm* comm, struct task* const* tasks, int ntasks) {
  struct gpu_comm* g = comm->engine_state;
  const struct task* t0 = tasks[0];
  int n = comm->nranks, me = comm->rank;
  struct ce_list l = {g, 0};
  for (int i = 0; i < ntasks; i++) {
    if (tasks[i]->coll == COLL_ALLGATHER || tasks[i]->coll == COLL_BROADCAST)
      NCCLCHECK(list_coll(comm, tasks[i], &l));
    else
      NCCLCHECK(task_messages(tasks[i], me, n, add_msg, &l));
  }
  if (l.n == 0) return gpu_launch_event_record(t0);  /* nothing to move */
  size_t *snd = g->ce_bytes, *rcv = g->ce_bytes + n; /* NULL where the path was never set up */
  if (snd != NULL) memset(snd, 0, 2 * (size_t)n * sizeof *snd);
  for (int i = 0; i < l.n; i++) {
    const struct ce_msg* m = &g->ce_msgs[i];
    if (m->peer == me) continue;
    if (!g->ce_ok) {
      WARN("%s #%llu on rank %d: MONEL_COPY_ENGINE=1 but the copy-engine path cannot reach rank "
           "%d (it needs the ranks on one host, peer access between every pair of GPUs and a "
           "driver with stream memory operations): unset MONEL_COPY_ENGINE",
           coll_name(t0->coll), (unsigned long long)t0->seq, me, m->peer);
      return ncclInvalidUsage;
    }
    (m->is_send ? snd : rcv)[m->peer] += m->bytes;
  }
  cudaStream_t s = t0->stream;
  uint64_t last = t0->seq;
  for (int i = 1; i < ntasks; i++)
    if (tasks[i]->seq > last) last = tasks[i]->seq;
  NCCLCHECK(gpu_order_after_last(g, s));
  NCCLCHECK(gpu_join_streams(g, tasks, ntasks, 0));
  for (int i = 0; i < ntasks; i++) NCCLCHECK(gpu_launch_event_record(tasks[i])); /* no kernel */
  struct self_ctx self = {t0, g->ce_msgs, s};
  NCCLCHECK(task_pair_self(me, l.n, msg_view, copy_self, &self));
  if (n > 1) NCCLCHECK(run_rounds(comm, g, t0, g->ce_msgs, l.n, snd, rcv, s));
  /* Progress for the watch and for drain, as a kernel reports it (dev.h dev_ctl): the stream
   * writes the operation's sequence number when it is through. The comm's eager operations run
   * one after the other, so the number only grows; a captured one writes nothing (a replay would
   * move the number back below later operations), so an abort does not wait for it. */
  if (write_value64 != NULL && !gpu_capturing(s)) {
    __atomic_store_n(&g->eager_seq, last, __ATOMIC_RELEASE);
    CUresult r = write_value64((CUstream)s, (CUdeviceptr)(uintptr_t)&g->ctl.ctr[DEV_CTR_DONE_SEQ],
                               last, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS) {
      WARN("%s #%llu on rank %d: cuStreamWriteValue64 failed with CUDA driver error %d",
           coll_name(t0->coll), (unsigned long long)t0->seq, me, (int)r);
      return ncclUnhandledCudaError;
    }
  }
  return gpu_join_streams(g, tasks, ntasks, 1);
}

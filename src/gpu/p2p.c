/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point on the CUDA engine: Send/Recv of a group, AlltoAll(v), Gather and Scatter become
 * messages (core/task.c), grouped into per-(peer, direction) lists and run by the p2p kernel
 * (device/p2p.cu) in one launch.
 *
 * Launches: all lists of a batch in one launch when they fit its arguments (DEV_P2P_MAX_OPS
 * messages) and the comm's block budget (NCCL_MAX_CTAS, at least 2). Otherwise one launch per
 * (distance d, slice j): the sends to rank + d and the receives from rank - d with list positions
 * [j*K, (j+1)*K). A peer's launch (d, j) holds exactly the receives matching my sends of launch (d,
 * j), and launches run in the same (d, j) order everywhere, so no launch waits for one that comes
 * after it on another rank.
 *
 * Streams: a batch runs on the stream of its first operation; other streams of the batch wait
 * for it to start and it waits for them to finish, through one event of the comm. */
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "gpu/gpu.h"

#define SLICE (DEV_P2P_MAX_OPS / 2)

struct gmsg {
  char* buf;
  size_t bytes;
  int peer, is_send;
  int nch; /* channels the message uses: a function of what both sides know */
};

struct msgs {
  struct gpu_comm* g;
  int n;      /* messages listed */
  int nranks; /* of the comm */
};

/* Blocks a launch may have: the comm's NCCL_MAX_CTAS, but at least one sending and one receiving
 * (a block that did both could wait on itself). */
static int launch_budget(const struct gpu_comm* g) {
  int b = g->cta.max < DEV_P2P_MAX_BLOCKS ? g->cta.max : DEV_P2P_MAX_BLOCKS;
  return b < 2 ? 2 : b;
}

/* Channels of a message (core/tune.h): the fewest that fill its share of the link, one per
 * DEV_P2P_CHUNK bytes below that; AlltoAll(v), Gather and Scatter share the link among the n - 1
 * peers a rank exchanges with at once. At most the comm's p2p channels and half a launch's
 * budget, so that a send list and a receive list fit one launch. Both sides know the collective,
 * the size and n, so they cut a message alike. */
static int msg_channels(const struct gpu_comm* g, int n, const struct task* t, size_t bytes) {
  struct tune_cta_limits c = tune_task_cta(g->cta, t);
  int cap = g->p2p_nch, half = launch_budget(g) / 2;
  if (c.max < cap) cap = c.max;
  if (half < cap) cap = half;
  double link = g->link_gbps;
  if (t->coll != COLL_SEND && t->coll != COLL_RECV && n > 1) {
    link /= n - 1;
    int share = (DEV_P2P_MAX_BLOCKS - DEV_P2P_MAX_NCH) / (2 * (n - 1));
    if (share < cap) cap = share < 1 ? 1 : share;
  }
  struct tune_blocks_in in = {(double)bytes,
                              link,
                              g->block_gbps,
                              DEV_P2P_CHUNK,
                              1,
                              cap,
                              (c.policy & NCCL_CTA_POLICY_EFFICIENCY) != 0};
  return tune_blocks(&in);
}

ncclResult_t gpu_list_grow(void** list, int* cap, int n, size_t elem, const struct task* t) {
  if (n < *cap) return ncclSuccess;
  int want = *cap ? 2 * *cap : 64;
  void* p = realloc(*list, (size_t)want * elem);
  if (p == NULL) {
    WARN("%s #%llu: out of host memory listing its messages", coll_name(t->coll),
         (unsigned long long)t->seq);
    return ncclSystemError;
  }
  *list = p, *cap = want;
  return ncclSuccess;
}

static ncclResult_t add_msg(void* ctx, const struct task* t, char* buf, size_t bytes, int peer,
                            int is_send) {
  struct msgs* m = ctx;
  struct gpu_comm* g = m->g;
  NCCLCHECK(gpu_list_grow((void**)&g->msgs, &g->msg_cap, m->n, sizeof *g->msgs, t));
  int nch = msg_channels(g, m->nranks, t, bytes);
  if ((g->p2p_flags[peer] & GPU_PEER_NET) && nch > g->p2p_net_nch)
    nch = g->p2p_net_nch; /* a network peer: both sides cut the message alike */
  g->msgs[m->n++] = (struct gmsg){buf, bytes, peer, is_send, nch};
  return ncclSuccess;
}

/* Channels per peer: a message of b bytes uses dev_p2p_nch(b, this) of them. Same on every rank. */
int gpu_p2p_channels(int nchannels_max) {
  return nchannels_max < DEV_P2P_MAX_NCH ? nchannels_max : DEV_P2P_MAX_NCH;
}

static uint64_t op_len(const struct gmsg* m) {
  return (uint64_t)m->bytes | (uint64_t)m->nch << DEV_P2P_NCH_SHIFT;
}

/* Append the blocks of one list: the messages k of (peer, kind) with lo <= position < hi. */
static int add_list(struct dev_p2p_args* a, int budget, int* nops, const struct gmsg* ms, int nm,
                    int kind, int peer, int lo, int hi) {
  int first = *nops, pos = 0, nchmax = 0;
  for (int i = 0; i < nm; i++) {
    const struct gmsg* m = &ms[i];
    if (m->peer != peer || m->is_send != (kind == DEV_P2P_SEND)) continue;
    if (pos >= lo && pos < hi) {
      if (*nops == DEV_P2P_MAX_OPS) return 0;
      a->ops[(*nops)++] = (struct dev_p2p_op){m->buf, op_len(m)};
      int c = m->nch;
      if (c > nchmax) nchmax = c;
    }
    pos++;
  }
  for (int c = 0; c < nchmax; c++) {
    if (a->nblocks == budget) return 0;
    a->blocks[a->nblocks++] =
        (struct dev_p2p_block){peer, (unsigned char)kind, (unsigned char)c, (unsigned char)first,
                               (unsigned char)(*nops - first)};
  }
  return 1;
}

/* Append the copies to myself with pair positions lo <= k < hi: the k-th send to myself goes to
 * the k-th receive from myself (checked to exist, with the same size, before). */
static int add_self(struct dev_p2p_args* a, int budget, int* nops, const struct gmsg* ms, int nm,
                    int me, int lo, int hi) {
  int first = *nops, k = 0, r = -1, nchmax = 0;
  for (int s = 0; s < nm; s++) {
    if (!ms[s].is_send || ms[s].peer != me) continue;
    do r++;
    while (ms[r].is_send || ms[r].peer != me);
    if (k >= lo && k < hi) {
      if (*nops + 2 > DEV_P2P_MAX_OPS) return 0;
      a->ops[(*nops)++] = (struct dev_p2p_op){ms[s].buf, op_len(&ms[s])};
      a->ops[(*nops)++] = (struct dev_p2p_op){ms[r].buf, op_len(&ms[r])};
      int c = ms[s].nch;
      if (c > nchmax) nchmax = c;
    }
    k++;
  }
  for (int c = 0; c < nchmax; c++) {
    if (a->nblocks == budget) return 0;
    a->blocks[a->nblocks++] =
        (struct dev_p2p_block){me, DEV_P2P_SELF, (unsigned char)c, (unsigned char)first,
                               (unsigned char)((*nops - first) / 2)};
  }
  return 1;
}

struct self_ctx {
  const struct task* t;
  const struct gmsg* ms;
};

static void msg_view(const void* ctx, int i, struct task_msg_view* v) {
  const struct self_ctx* c = ctx;
  *v = (struct task_msg_view){c->t, c->ms[i].bytes, c->ms[i].peer, c->ms[i].is_send};
}

static void args_init(struct gpu_comm* g, struct ncclComm* comm, struct dev_p2p_args* a) {
  a->nblocks = 0;
  a->rank = comm->rank;
  a->nch = g->p2p_nch;
  a->nslots = g->p2p_nslots;
  a->slot_bytes = g->p2p_slot_bytes;
  a->fifo_bytes = dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes);
  a->steps = g->p2p_steps;
  a->peers = g->peer_dev;
}

/* done_seq: what the kernel reports done when it finishes; issued_seq: the batch's last op.
 * *first: the batch launched nothing yet (its first kernel carries the launch-completion event of
 * a collective, ncclCollConfig_t.launchCompletionEvent: gpu_launch_of). */
static ncclResult_t launch(struct ncclComm* comm, const struct task* t, uint64_t done_seq,
                           uint64_t issued_seq, struct dev_p2p_args* a, cudaStream_t stream,
                           int* first) {
  if (a->nblocks == 0) return ncclSuccess;
  a->ctl = gpu_ctl(comm->engine_state, done_seq, issued_seq, stream);
  struct dev_launch_ex ex;
  cudaError_t e = dev_p2p_launch(a, stream, *first ? gpu_launch_of(t, &ex) : NULL);
  *first = 0;
  if (e == cudaSuccess) return ncclSuccess;
  (void)cudaGetLastError();
  WARN("%s #%llu on rank %d: the point-to-point kernel launch%s failed: %s", coll_name(t->coll),
       (unsigned long long)t->seq, comm->rank,
       t->launch_event ? " with config->launchCompletionEvent (made with cudaEventDisableTiming?)"
                       : "",
       cudaGetErrorString(e));
  return ncclUnhandledCudaError;
}

ncclResult_t gpu_join_streams(struct gpu_comm* g, struct task* const* tasks, int ntasks,
                              int after) {
  cudaStream_t s0 = tasks[0]->stream;
  for (int i = 1; i < ntasks; i++) {
    cudaStream_t s = tasks[i]->stream;
    int seen = s == s0;
    for (int k = 1; k < i && !seen; k++) seen = tasks[k]->stream == s;
    if (seen) continue;
    cudaStream_t from = after ? s : s0, to = after ? s0 : s;
    CUDACHECK(cudaEventRecord(g->join_ev, from));
    CUDACHECK(cudaStreamWaitEvent(to, g->join_ev, 0));
  }
  return ncclSuccess;
}

ncclResult_t gpu_p2p_run(struct ncclComm* comm, struct task* const* tasks, int ntasks) {
  struct gpu_comm* g = comm->engine_state;
  int n = comm->nranks, me = comm->rank;
  struct msgs m = {g, 0, n};
  for (int i = 0; i < ntasks; i++) NCCLCHECK(task_messages(tasks[i], me, n, add_msg, &m));
  if (m.n == 0) return gpu_launch_event_record(tasks[0]); /* no kernel */
  struct self_ctx self = {tasks[0], g->msgs};
  NCCLCHECK(task_pair_self(me, m.n, msg_view, NULL, &self)); /* the kernel copies the pairs */
  for (int i = 0; i < m.n; i++)
    if (g->msgs[i].peer != me && !g->p2p_ok) {
      WARN("%s #%llu on rank %d: rank %d's GPU cannot be reached for point-to-point transfers "
           "(no peer access between the GPUs of its host); set NCCL_P2P_DISABLE=1 to put the "
           "FIFOs in host memory",
           coll_name(tasks[0]->coll), (unsigned long long)tasks[0]->seq, me, g->msgs[i].peer);
      return ncclInvalidUsage;
    }
  cudaStream_t stream = tasks[0]->stream;
  struct dev_p2p_args* a = &g->p2p_args;
  uint64_t first_seq = tasks[0]->seq, last = tasks[0]->seq;
  for (int i = 1; i < ntasks; i++) {
    if (tasks[i]->seq < first_seq) first_seq = tasks[i]->seq;
    if (tasks[i]->seq > last) last = tasks[i]->seq;
  }
  NCCLCHECK(gpu_order_after_last(g, stream));
  NCCLCHECK(gpu_join_streams(g, tasks, ntasks, 0));
  int ok = 1, nops = 0, budget = launch_budget(g), first = 1;
  args_init(g, comm, a);
  for (int d = 1; d < n && ok; d++) {
    ok = add_list(a, budget, &nops, g->msgs, m.n, DEV_P2P_SEND, (me + d) % n, 0, m.n);
    ok = ok && add_list(a, budget, &nops, g->msgs, m.n, DEV_P2P_RECV, (me - d + n) % n, 0, m.n);
  }
  ok = ok && add_self(a, budget, &nops, g->msgs, m.n, me, 0, m.n);
  if (ok) {
    NCCLCHECK(launch(comm, tasks[0], last, last, a, stream, &first));
  } else {
    /* Several launches: only the last reports the batch done; each is launched once the next
     * one is built, so the last is known. */
    struct dev_p2p_args* built = NULL;
    for (int d = 0; d < n; d++) {
      for (int j = 0;; j++) {
        a = built == &g->p2p_args ? &g->p2p_args2 : &g->p2p_args;
        args_init(g, comm, a);
        nops = 0;
        int lo = j * SLICE, hi = lo + SLICE;
        if (d == 0) {
          add_self(a, budget, &nops, g->msgs, m.n, me, lo / 2, hi / 2);
        } else {
          add_list(a, budget, &nops, g->msgs, m.n, DEV_P2P_SEND, (me + d) % n, lo, hi);
          add_list(a, budget, &nops, g->msgs, m.n, DEV_P2P_RECV, (me - d + n) % n, lo, hi);
        }
        if (nops == 0) break;
        if (built) NCCLCHECK(launch(comm, tasks[0], first_seq - 1, last, built, stream, &first));
        built = a;
      }
    }
    if (built) NCCLCHECK(launch(comm, tasks[0], last, last, built, stream, &first));
  }
  return gpu_join_streams(g, tasks, ntasks, 1);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Tree algorithms on the CPU engine: the double binary tree of algo/tree.h for AllReduce,
 * Broadcast and Reduce. Each tree has an up stream (children -> parent) and a down stream
 * (parent -> children) of chunk steps; one progress loop moves whichever step of the (up to)
 * four streams has all its FIFO slots ready, so no stream waits behind another.
 *
 * Connections: one FIFO per (tree, peer, direction), created the first time an operation needs
 * it; every rank runs the same operations in the same order and derives the same links, so both
 * ends of a link take part in its setup (cpu_connect, in three phases that cannot deadlock). A
 * tree's FIFO with a peer is the point-to-point one (cpu.h), except where an earlier tree of the
 * same operation links the same two ranks (its streams run at the same time): then the tree's
 * own. An edge of a tree is an edge at both its ends, so both ends choose the same FIFO.
 *
 * The trees are built on the comm's ring positions (tree_node_in_order), so the ranks of a host
 * sit together in them and few links cross between hosts.
 *
 * Splitting (algo/tree.h tree_part, tree_chunk, shared with the GPU engine): buffers below
 * SPLIT_MIN_BYTES go through tree 0 only (one message per link is cheaper than two); larger ones
 * are cut in two halves. Each half moves in chunks of at most a FIFO slot, small enough that a
 * half makes about TREE_PIPELINE steps (at least CHUNK_MIN_BYTES each), so the levels of the tree
 * work at the same time. */
#include <stdlib.h>
#include <string.h>
#include "algo/tree.h"
#include "boot/tags.h"
#include "util/check.h"
#include "cpu/cpu.h"
#include "cpu/reduce.h"
#include "util/dtype.h"

#define SPLIT_MIN_BYTES 8192
#define CHUNK_MIN_BYTES 16384

struct cpu_tree {
  struct conn* send[TREE_COUNT]; /* nranks each, by peer */
  struct conn* recv[TREE_COUNT];
  unsigned char* send_ready[TREE_COUNT];
  unsigned char* recv_ready[TREE_COUNT];
};

/* The links of one operation in one tree. */
struct links {
  int nsend, nrecv;
  int send[3], recv[3];
};

/* One stream of chunk steps: the same verb on consecutive chunks of [next, hi). */
struct stream {
  enum verb verb;
  int nrecv, nsend;
  struct conn *recv[2], *send[2];
  size_t next, hi, chunk; /* elements */
  struct conn* blocked;   /* the FIFO that stopped the last attempt */
  int blocked_send;
};

struct exec {
  struct wait_ctx w;
  const char* in;
  char* out;
  size_t esize;
  ncclDataType_t dt;
  const struct red_op* op;
  struct red_op comb; /* combines two partial results: no pre step */
};

/* The tables of connections exist from the comm's creation on, so an abort from another thread
 * (core/watch.c) never meets them half made; the FIFOs in them are created when needed. */
ncclResult_t cpu_tree_init(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  struct cpu_tree* tr = NULL;
  NCCLCALLOC(tr, 1);
  cc->tree = tr;
  for (int t = 0; t < TREE_COUNT; t++) {
    NCCLCALLOC(tr->send[t], comm->nranks);
    NCCLCALLOC(tr->recv[t], comm->nranks);
    NCCLCALLOC(tr->send_ready[t], comm->nranks);
    NCCLCALLOC(tr->recv_ready[t], comm->nranks);
  }
  return ncclSuccess;
}

/* Whether tree t of this operation (nd: its nodes at this rank) uses its own FIFOs with peer p:
 * an earlier tree links this rank with p too. */
static int own_fifo(const struct tree_node* nd, int t, int p) {
  for (int u = 0; u < t; u++) {
    if (nd[u].parent == p) return 1;
    for (int i = 0; i < nd[u].nchild; i++)
      if (nd[u].child[i] == p) return 1;
  }
  return 0;
}

/* Tree t's FIFO with peer p in one direction, and the flag that says it is connected. */
static struct conn* fifo_of(struct cpu_comm* cc, const struct tree_node* nd, int t, int p, int send,
                            unsigned char** ready) {
  struct cpu_tree* tr = cc->tree;
  if (own_fifo(nd, t, p)) {
    *ready = send ? &tr->send_ready[t][p] : &tr->recv_ready[t][p];
    return send ? &tr->send[t][p] : &tr->recv[t][p];
  }
  *ready = send ? &cc->p2p_send_ready[p] : &cc->p2p_recv_ready[p];
  return send ? &cc->p2p_send[p] : &cc->p2p_recv[p];
}

static struct links op_links(const struct tree_node* nd, enum coll_kind coll) {
  struct links l = {0, 0, {0}, {0}};
  int up = coll != COLL_BROADCAST, down = coll != COLL_REDUCE;
  if (nd->parent >= 0 && up) l.send[l.nsend++] = nd->parent;
  if (nd->parent >= 0 && down) l.recv[l.nrecv++] = nd->parent;
  for (int i = 0; i < nd->nchild; i++) {
    if (up) l.recv[l.nrecv++] = nd->child[i];
    if (down) l.send[l.nsend++] = nd->child[i];
  }
  return l;
}

/* Create the links this operation needs and does not have yet (see the top of the file). */
static ncclResult_t connect_links(struct ncclComm* comm, const struct tree_node* nd,
                                  const struct links l[TREE_COUNT]) {
  struct cpu_comm* cc = comm->engine_state;
  struct cpu_link links[TREE_COUNT * 6];
  int nl = 0;
  for (int t = 0; t < TREE_COUNT; t++) {
    int tag = BOOT_TAG_CPU_TREE + 2 * t;
    for (int i = 0; i < l[t].nrecv; i++) {
      int p = l[t].recv[i];
      unsigned char* ready = NULL;
      struct conn* c = fifo_of(cc, nd, t, p, 0, &ready);
      links[nl++] = (struct cpu_link){c, p, 1, tag, ready, 0};
    }
    for (int i = 0; i < l[t].nsend; i++) {
      int p = l[t].send[i];
      unsigned char* ready = NULL;
      struct conn* c = fifo_of(cc, nd, t, p, 1, &ready);
      links[nl++] = (struct cpu_link){c, p, 0, tag, ready, 0};
    }
  }
  return cpu_connect(comm, links, nl);
}

static void copy_bytes(void* dst, const void* src, size_t len) {
  if (dst != src && len) memcpy(dst, src, len);
}

/* Run one step of s if all its slots are ready: 1 if it ran, 0 if a FIFO is not ready. */
static int try_step(struct exec* x, struct stream* s, ncclResult_t* res) {
  const void* r[2] = {NULL, NULL};
  void* w[2] = {NULL, NULL};
  size_t got[2] = {0, 0};
  for (int i = 0; i < s->nrecv; i++)
    if (!fifo_recv_try(s->recv[i], &r[i], &got[i])) {
      s->blocked = s->recv[i], s->blocked_send = 0;
      return 0;
    }
  for (int i = 0; i < s->nsend; i++)
    if (!fifo_send_try(s->send[i], &w[i])) {
      s->blocked = s->send[i], s->blocked_send = 1;
      return 0;
    }
  size_t n = s->hi - s->next < s->chunk ? s->hi - s->next : s->chunk, len = n * x->esize;
  for (int i = 0; i < s->nrecv; i++)
    if (got[i] != len) {
      *res = cpu_check_len(&x->w, got[i], len, s->recv[i]->peer);
      return 0;
    }
  const char* in = x->in ? x->in + s->next * x->esize : NULL;
  char* out = x->out ? x->out + s->next * x->esize : NULL;
  int last;
  switch (s->verb) {
  case VERB_SEND:
    red_apply(w[0], NULL, in, n, x->dt, x->op, RED_FIRST);
    break;
  case VERB_RECV_REDUCE_SEND:
    red_apply(w[0], r[0], in, n, x->dt, x->op, 0);
    for (int i = 1; i < s->nrecv; i++) red_apply(w[0], w[0], r[i], n, x->dt, &x->comb, 0);
    break;
  case VERB_RECV_REDUCE_COPY:
  case VERB_RECV_REDUCE_COPY_SEND:
    last = s->nrecv == 1 ? RED_LAST : 0;
    red_apply(out, r[0], in, n, x->dt, x->op, last);
    for (int i = 1; i < s->nrecv; i++)
      red_apply(out, out, r[i], n, x->dt, &x->comb, i == s->nrecv - 1 ? RED_LAST : 0);
    for (int i = 0; i < s->nsend; i++) copy_bytes(w[i], out, len);
    break;
  case VERB_COPY_SEND:
    copy_bytes(out, in, len);
    for (int i = 0; i < s->nsend; i++) copy_bytes(w[i], in, len);
    break;
  case VERB_RECV_COPY_SEND:
  case VERB_RECV:
    copy_bytes(out, r[0], len);
    for (int i = 0; i < s->nsend; i++) copy_bytes(w[i], r[0], len);
    break;
  default:
    *res = ncclInternalError;
    return 0;
  }
  for (int i = 0; i < s->nrecv; i++) fifo_recv_release(s->recv[i]);
  for (int i = 0; i < s->nsend; i++) fifo_send_post(s->send[i], len);
  s->next += n;
  return 1;
}

/* Move every stream to its end, never blocking on one FIFO while another could move. */
static ncclResult_t progress(struct exec* x, struct stream* s, int ns) {
  struct fifo_idle idle = {0, 0, 0};
  ncclResult_t res = ncclSuccess;
  for (;;) {
    int moved = 0;
    struct stream* pending = NULL;
    for (int i = 0; i < ns; i++) {
      int nslots = 0;
      while (s[i].next < s[i].hi && nslots < 8 && try_step(x, &s[i], &res)) moved++, nslots++;
      if (res != ncclSuccess) return res;
      if (s[i].next < s[i].hi && pending == NULL) pending = &s[i];
    }
    if (pending == NULL) return ncclSuccess;
    if (moved) {
      fifo_idle_reset(&idle);
      continue;
    }
    if (!fifo_idle(&idle, pending->blocked, pending->blocked_send)) continue;
    for (int i = 0; i < ns; i++)
      if (s[i].next < s[i].hi && s[i].blocked) NCCLCHECK(fifo_check(s[i].blocked, &x->w));
  }
}

/* A stream of tree t's node with verb v, moving [lo, hi) in chunks. */
/* A stream of tree t's node (nd: the nodes of every tree at this rank) with verb v, moving
 * [lo, hi) in chunks. */
static struct stream make_stream(struct cpu_comm* cc, int t, const struct tree_node* nd,
                                 enum verb v, size_t lo, size_t hi, size_t chunk) {
  struct stream s = {v, 0, 0, {NULL, NULL}, {NULL, NULL}, lo, hi, chunk, NULL, 0};
  /* In a tree: reduce what the children send; only receive from the parent; store and send
   * down to the children; send without storing up to the parent (algo/prim.h). */
  int tr_bits = verb_traits(v), recvs = tr_bits & VERB_RECVS, sends = tr_bits & VERB_SENDS;
  int reduces = tr_bits & VERB_REDUCES, stores = tr_bits & VERB_STORES;
  const struct tree_node* me = &nd[t];
  unsigned char* ready = NULL;
  if (recvs && reduces)
    for (int i = 0; i < me->nchild; i++)
      s.recv[s.nrecv++] = fifo_of(cc, nd, t, me->child[i], 0, &ready);
  if (recvs && !reduces) s.recv[s.nrecv++] = fifo_of(cc, nd, t, me->parent, 0, &ready);
  if (sends && stores)
    for (int i = 0; i < me->nchild; i++)
      s.send[s.nsend++] = fifo_of(cc, nd, t, me->child[i], 1, &ready);
  if (sends && !stores) s.send[s.nsend++] = fifo_of(cc, nd, t, me->parent, 1, &ready);
  return s;
}

/* The profiler's ProxyOps of a stream (cpu/prof.h): a slot per chunk on each of its FIFOs; the
 * channel is the tree. */
static void prof_stream(struct ncclComm* comm, const struct task* t, const struct stream* s,
                        int tree) {
  uint64_t steps = (s->hi - s->next + s->chunk - 1) / s->chunk;
  for (int i = 0; i < s->nrecv; i++) cpu_prof_op(comm, t, s->recv[i], 0, tree, steps);
  for (int i = 0; i < s->nsend; i++) cpu_prof_op(comm, t, s->send[i], 1, tree, steps);
}

ncclResult_t cpu_tree_run(struct ncclComm* comm, const struct task* t) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, rank = comm->rank, ar = t->coll == COLL_ALLREDUCE;
  int root = ar ? 0 : t->root;
  struct exec x = {{comm, t}, t->sendbuff, t->recvbuff, dtype_size(t->dtype),
                   t->dtype,  &t->op,      t->op};
  if (x.comb.kind == RED_PREMULSUM) x.comb.kind = RED_SUM;
  if (n == 1) {
    if (t->coll == COLL_BROADCAST)
      copy_bytes(x.out, x.in, t->count * x.esize);
    else
      red_apply(x.out, NULL, x.in, t->count, x.dt, x.op, RED_FIRST | RED_LAST);
    return ncclSuccess;
  }
  struct tree_node nd[TREE_COUNT];
  struct links l[TREE_COUNT];
  for (int k = 0; k < TREE_COUNT; k++) {
    nd[k] = tree_node_in_order(rank, n, root, k, comm->ring_order, comm->ring_pos);
    l[k] = op_links(&nd[k], t->coll);
  }
  NCCLCHECK(connect_links(comm, nd, l));
  /* The schedule's offsets (algo/tree.h, as the GPU engine cuts them): a part per tree, one
   * part below SPLIT_MIN_BYTES; steps of about a TREE_PIPELINE-th of a part. */
  size_t count = t->count;
  int nparts = count * x.esize < SPLIT_MIN_BYTES ? 1 : TREE_COUNT;
  struct stream s[2 * TREE_COUNT];
  int ns = 0;
  for (int k = 0; k < nparts; k++) {
    size_t lo, hi;
    tree_part(count, nparts, k, 1, &lo, &hi);
    if (lo == hi) continue;
    size_t max = cpu_step_bytes(cc, t) / x.esize, min = CHUNK_MIN_BYTES / x.esize;
    if (min > max) min = max;
    size_t chunk = tree_chunk(hi - lo, min ? min : 1, max ? max : 1, 1);
    enum verb up = tree_up_verb(&nd[k], ar), down = tree_down_verb(&nd[k], ar);
    int ns0 = ns;
    if (t->coll != COLL_BROADCAST) s[ns++] = make_stream(cc, k, nd, up, lo, hi, chunk);
    if (t->coll != COLL_REDUCE && down != VERB_NONE)
      s[ns++] = make_stream(cc, k, nd, down, lo, hi, chunk);
    for (int i = ns0; i < ns && cpu_prof_wanted(comm, t); i++) prof_stream(comm, t, &s[i], k);
  }
  return progress(&x, s, ns);
}

void cpu_tree_close(struct ncclComm* comm, int lost_rank) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc == NULL || cc->tree == NULL) return;
  for (int t = 0; t < TREE_COUNT; t++)
    for (int p = 0; p < comm->nranks; p++) {
      if (cc->tree->send[t]) fifo_close(&cc->tree->send[t][p], lost_rank);
      if (cc->tree->recv[t]) fifo_close(&cc->tree->recv[t][p], lost_rank);
    }
}

void cpu_tree_free(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc == NULL || cc->tree == NULL) return;
  struct cpu_tree* tr = cc->tree;
  for (int t = 0; t < TREE_COUNT; t++) {
    for (int p = 0; p < comm->nranks; p++) {
      if (tr->send[t] && tr->send[t][p].tr) tr->send[t][p].tr->free(&tr->send[t][p]);
      if (tr->recv[t] && tr->recv[t][p].tr) tr->recv[t][p].tr->free(&tr->recv[t][p]);
    }
    free(tr->send[t]);
    free(tr->recv[t]);
    free(tr->send_ready[t]);
    free(tr->recv_ready[t]);
  }
  free(tr);
  cc->tree = NULL;
}

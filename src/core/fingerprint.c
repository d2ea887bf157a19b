/* SPDX-License-Identifier: BSD-3-Clause */
/* Mismatched calls caught: see fingerprint.h.
 *
 * Wire (FP_MSG_DATA, to the next rank): struct data_hdr, ncoll struct coll_rec (this rank's latest
 * collectives, oldest first), npair struct pair_rec (the Send/AlltoAllv chains of ordered pairs,
 * travelling around the ring to their receiver). FP_MSG_MISMATCH: struct mismatch_msg, passed on
 * around the ring until it is back at its origin; every rank fails its comm with its text. */
#include "core/fingerprint.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "core/comm.h"
#include "core/task.h"
#include "core/watch_report.h"
#include "util/dtype.h"
#include "util/log.h"
#include "util/param.h"

#define FP_HIST  1024 /* own collectives remembered to compare with the previous rank's */
#define FP_BATCH 32   /* latest collectives sent per message */
#define FP_PEND  64   /* the previous rank's records ahead of this rank, kept to compare later */
#define FP_PHIST 64   /* own receives per pair remembered */
#define FP_KINDS 2    /* pair chains: 0 Send/Recv, 1 AlltoAllv counts */
/* Other ranks' pair records passed on per message, at most: the rest wait for the next one (a
 * pair keeps only its newest record: its chain covers the older ones). */
#define FP_FWD_BATCH 8192
#define TEXT_MAX     1024

struct coll_rec {
  uint64_t index, chain;
  struct wop op;
};

struct pair_rec {
  int32_t src, dst, kind, pad;
  uint64_t k, chain, bytes, seq; /* the src's k-th send to dst: chain after it, its bytes, seq */
};

struct data_hdr {
  int32_t from, ncoll, npair, pad;
};

struct mismatch_msg {
  int32_t origin, pad;
  char text[TEXT_MAX];
};

struct hist {
  uint64_t chain, bytes, seq;
};

struct send_side {
  uint64_t n, chain, bytes, seq, sent_n;
};

struct recv_side {
  uint64_t n, chain;
  struct hist* h; /* FP_PHIST, from the first receive from that peer (NULL: none, or no memory) */
  int has_pending;
  struct pair_rec pending; /* the sender is ahead: compare when this rank gets there */
};

struct fp {
  pthread_mutex_t mu;
  struct ncclComm* comm;
  int rank, nranks, pairs;
  int failed;
  double sent_at;
  /* The user's thread records a collective without taking mu: its chain hash in chains[index %
   * FP_HIST], then ncoll (both atomic, release); chain is its own. The rest is under mu. The
   * calls themselves (to describe them) are the watch's record (op_of). */
  uint64_t ncoll, chain, sent_ncoll;
  uint64_t chains[FP_HIST];
  fp_op_fn op_of;
  void* op_ctx;
  struct coll_rec pend[FP_PEND];
  int npend;
  struct send_side* snd; /* [kind * nranks + peer] */
  struct recv_side* rcv;
  /* Records of others to pass on, oldest first, one per (src, dst, kind): fwd_at is an
   * open-addressing set of their positions + 1 (0: empty), fwd_slots a power of two at least
   * twice fwd_cap. Both grow with the pairs that pass through this rank, never with n^2. */
  struct pair_rec* fwd;
  int nfwd, fwd_cap;
  int32_t* fwd_at;
  int fwd_slots;
  int fwd_warned;
  char* buf; /* outgoing message */
  size_t buf_cap;
};

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

static int rooted(int coll) {
  return coll == COLL_BROADCAST || coll == COLL_REDUCE || coll == COLL_GATHER ||
         coll == COLL_SCATTER;
}

static int same_call(const struct wop* a, const struct wop* b) {
  return a->coll == b->coll && a->count == b->count && a->dtype == b->dtype && a->op == b->op &&
         a->root == b->root;
}

struct fp* fp_create(struct ncclComm* comm) {
  if (comm->nranks < 2 || param_int(PARAM_CHECK_CALLS) == 0) return NULL;
  struct fp* f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  int n = comm->nranks;
  f->comm = comm, f->rank = comm->rank, f->nranks = n;
  f->snd = calloc((size_t)FP_KINDS * n, sizeof *f->snd);
  f->rcv = calloc((size_t)FP_KINDS * n, sizeof *f->rcv);
  f->pairs = f->snd != NULL && f->rcv != NULL; /* else collectives alone are compared */
  pthread_mutex_init(&f->mu, NULL);
  return f;
}

void fp_set_ops(struct fp* f, fp_op_fn op_of, void* ctx) {
  if (f != NULL) f->op_of = op_of, f->op_ctx = ctx;
}

void fp_free(struct fp* f) {
  if (f == NULL) return;
  pthread_mutex_destroy(&f->mu);
  for (int i = 0; f->rcv != NULL && i < FP_KINDS * f->nranks; i++) free(f->rcv[i].h);
  free(f->snd), free(f->rcv), free(f->fwd), free(f->fwd_at), free(f->buf);
  free(f);
}

static void pair_send(struct fp* f, int kind, int peer, uint64_t bytes, uint64_t seq) {
  struct send_side* s = &f->snd[kind * f->nranks + peer];
  s->n++, s->chain = mix(s->chain, bytes), s->bytes = bytes, s->seq = seq;
}

static void pair_recv(struct fp* f, int kind, int peer, uint64_t bytes, uint64_t seq) {
  struct recv_side* r = &f->rcv[kind * f->nranks + peer];
  r->n++, r->chain = mix(r->chain, bytes);
  if (r->h == NULL && r->n == 1) r->h = calloc(FP_PHIST, sizeof *r->h); /* NULL: not compared */
  if (r->h != NULL) r->h[r->n % FP_PHIST] = (struct hist){r->chain, bytes, seq};
}

static uint64_t ncoll_now(const struct fp* f) {
  return __atomic_load_n(&f->ncoll, __ATOMIC_ACQUIRE);
}

/* The chain after this rank's collective number index; 0 when it is not recorded (not yet, or
 * FP_HIST - 1 or more collectives ago: its slot may hold a newer one). The slot is read after
 * an ncoll that covers it, and kept only if ncoll, read again after it, shows that the slot's
 * next writing had not started (that writing comes after ncoll reached index + FP_HIST - 1). */
static int chain_get(struct fp* f, uint64_t index, uint64_t* chain) {
  if (index == 0 || index > ncoll_now(f)) return 0;
  uint64_t v = __atomic_load_n(&f->chains[index % FP_HIST], __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__atomic_load_n(&f->ncoll, __ATOMIC_RELAXED) - index >= FP_HIST - 1) return 0;
  *chain = v;
  return 1;
}

/* This rank's collective number index as the watch recorded it, in the form the ranks compare
 * (count 0 for AlltoAllv, root 0 unless rooted); coll -1 when the watch no longer has it. */
static struct wop own_op(struct fp* f, uint64_t index) {
  struct wop o;
  if (f->op_of == NULL || !f->op_of(f->op_ctx, index, &o))
    return (struct wop){.coll_index = index, .coll = -1, .dtype = -1, .op = -1};
  if (o.coll == COLL_ALLTOALLV) o.count = 0;
  if (!rooted(o.coll)) o.root = 0;
  return o;
}

/* Send/Recv, and AlltoAllv's counts per pair, under mu. Not inlined: fp_issue stays short. */
__attribute__((noinline)) static void issue_pairs(struct fp* f, const struct task* t) {
  uint64_t size = dtype_size(t->dtype);
  pthread_mutex_lock(&f->mu);
  if (t->coll == COLL_SEND && t->root >= 0 && t->root < f->nranks) {
    pair_send(f, 0, t->root, t->count * size, t->seq);
  } else if (t->coll == COLL_RECV && t->root >= 0 && t->root < f->nranks) {
    pair_recv(f, 0, t->root, t->count * size, t->seq);
  } else if (t->coll == COLL_ALLTOALLV && t->vrows != NULL) {
    const size_t *sendcounts = t->vrows, *recvcounts = t->vrows + 2 * (size_t)f->nranks;
    for (int p = 0; p < f->nranks; p++) {
      if (p == f->rank) continue;
      pair_send(f, 1, p, sendcounts[p] * size, t->seq);
      pair_recv(f, 1, p, recvcounts[p] * size, t->seq);
    }
  }
  pthread_mutex_unlock(&f->mu);
}

/* A collective costs the user's thread one mix and two stores, no lock (what MONEL_CHECK_CALLS=1
 * adds to an 8-byte AllReduce): kind, type, op and root packed in one word,
 * spread by an odd multiplier and folded with the count (AlltoAllv: kind and type only). */
void fp_issue(struct fp* f, const struct task* t) {
  if (f == NULL) return;
  int p2p = t->coll == COLL_SEND || t->coll == COLL_RECV;
  if (!p2p) {
    int reduces =
        t->coll == COLL_ALLREDUCE || t->coll == COLL_REDUCE || t->coll == COLL_REDUCESCATTER;
    uint64_t count = t->coll == COLL_ALLTOALLV ? 0 : t->count, n = f->ncoll + 1;
    uint64_t key = (uint64_t)(uint8_t)t->coll | (uint64_t)(uint8_t)t->dtype << 8 |
                   (uint64_t)(uint16_t)(reduces ? t->op.kind : -1) << 16 |
                   (uint64_t)(uint32_t)(rooted(t->coll) ? t->root : 0) << 32;
    f->chain = mix(f->chain, key * 0xff51afd7ed558ccdull ^ count);
    __atomic_store_n(&f->chains[n % FP_HIST], f->chain, __ATOMIC_RELEASE);
    __atomic_store_n(&f->ncoll, n, __ATOMIC_RELEASE);
  }
  if (f->pairs && (p2p || t->coll == COLL_ALLTOALLV)) issue_pairs(f, t);
}

/* ---- comparing ------------------------------------------------------------------------------ */

static const char* host_of(struct fp* f, int r) {
  return f->comm->peers ? f->comm->peers[r].host : "?";
}

/* The previous rank's record against this rank's; 1 and text on a difference. */
static int coll_compare(struct fp* f, int from, const struct coll_rec* theirs, char* text) {
  struct coll_rec mine = {.index = theirs->index};
  if (!chain_get(f, theirs->index, &mine.chain) || mine.chain == theirs->chain) return 0;
  mine.op = own_op(f, theirs->index);
  char a[200], b[200];
  wop_describe(&theirs->op, a, sizeof a);
  wop_describe(&mine.op, b, sizeof b);
  if (!same_call(&theirs->op, &mine.op))
    snprintf(text, TEXT_MAX,
             "mismatched calls: rank %d (host %s) called %s where rank %d (host %s) called %s, as "
             "collective number %llu of each on this communicator; every rank must call the same "
             "collectives in the same order with the same count, type, op and root",
             from, host_of(f, from), a, f->rank, host_of(f, f->rank), b,
             (unsigned long long)theirs->index);
  else
    snprintf(text, TEXT_MAX,
             "mismatched calls: the collectives of rank %d (host %s) and rank %d (host %s) differ "
             "at some point before collective number %llu of each on this communicator (there rank "
             "%d called "
             "%s and rank %d %s); every rank must call the same collectives in the same order "
             "with the same count, type, op and root",
             from, host_of(f, from), f->rank, host_of(f, f->rank),
             (unsigned long long)theirs->index, from, a, f->rank, b);
  return 1;
}

/* A sender's chain against this rank's receives from it. Returns -1 while this rank is behind, 1
 * and text on a difference, 0 otherwise (also when too old to compare). */
static int pair_compare(struct fp* f, const struct pair_rec* p, char* text) {
  struct recv_side* r = &f->rcv[p->kind * f->nranks + p->src];
  if (p->k > r->n) return -1;
  if (r->n - p->k >= FP_PHIST || r->h == NULL) return 0;
  const struct hist* h = &r->h[p->k % FP_PHIST];
  if (h->chain == p->chain) return 0;
  const char* what = p->kind == 0 ? "Send" : "AlltoAllv";
  const char* other = p->kind == 0 ? "Recv" : "AlltoAllv";
  if (h->bytes != p->bytes)
    snprintf(text, TEXT_MAX,
             "mismatched calls: rank %d (host %s) sends %llu bytes to rank %d in its %s #%llu but "
             "rank %d (host %s) receives %llu bytes from rank %d in its %s #%llu (number %llu "
             "between them); %s",
             p->src, host_of(f, p->src), (unsigned long long)p->bytes, f->rank, what,
             (unsigned long long)p->seq, f->rank, host_of(f, f->rank), (unsigned long long)h->bytes,
             p->src, other, (unsigned long long)h->seq, (unsigned long long)p->k,
             p->kind == 0 ? "a Send and its Recv must have the same count and type size"
                          : "sendcounts[b] of rank a must equal recvcounts[a] of rank b");
  else
    snprintf(text, TEXT_MAX,
             "mismatched calls: the sizes of the %ss from rank %d (host %s) to rank %d (host %s) "
             "and of the matching %ss differ at some point before number %llu between them "
             "(rank %d's %s #%llu, rank %d's %s #%llu)",
             what, p->src, host_of(f, p->src), f->rank, host_of(f, f->rank), other,
             (unsigned long long)p->k, p->src, what, (unsigned long long)p->seq, f->rank, other,
             (unsigned long long)h->seq);
  return 1;
}

/* Compare the previous rank's records this rank has caught up with; keep the others. */
static int compare_pending(struct fp* f, char* text) {
  int kept = 0, bad = 0;
  uint64_t ncoll = ncoll_now(f);
  for (int i = 0; i < f->npend; i++) {
    const struct coll_rec* c = &f->pend[i];
    if (c->index > ncoll) {
      f->pend[kept++] = *c;
    } else if (!bad && ncoll - c->index < FP_HIST) {
      bad = coll_compare(f, (f->rank + f->nranks - 1) % f->nranks, c, text);
    }
  }
  f->npend = kept;
  for (int i = 0; f->pairs && !bad && i < FP_KINDS * f->nranks; i++) {
    struct recv_side* r = &f->rcv[i];
    if (!r->has_pending) continue;
    int res = pair_compare(f, &r->pending, text);
    if (res >= 0) r->has_pending = 0;
    bad = res == 1;
  }
  return bad;
}

/* ---- the watch thread ----------------------------------------------------------------------- */

/* Fails the comm with the mismatch (and its bootstrap: a call may wait in a connection setup
 * that the peer, in another call, never joins). An engine that saw its peers stop because of it
 * may have recorded ncclRemoteError first: the mismatch is the cause, so it takes that place. */
static void fail_comm(struct fp* f, const char* text) {
  ncclResult_t remote = ncclRemoteError;
  f->failed = 1;
  comm_fail(f->comm, ncclInvalidUsage, "%s", text);
  boot_abort(f->comm->boot);
  __atomic_compare_exchange_n(&f->comm->async_error, &remote, ncclInvalidUsage, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
}

/* Tells the other ranks first (their engines would otherwise see only this rank stop). */
static void fail_all(struct fp* f, int origin, const char* text, fp_send_fn send, void* ctx) {
  struct mismatch_msg m;
  memset(&m, 0, sizeof m);
  m.origin = origin;
  snprintf(m.text, sizeof m.text, "%s", text);
  (void)send(ctx, FP_MSG_MISMATCH, &m, sizeof m);
  fail_comm(f, m.text);
}

static int buf_reserve(struct fp* f, size_t len) {
  if (f->buf_cap >= len) return 0;
  char* b = realloc(f->buf, len);
  if (b == NULL) return -1;
  f->buf = b, f->buf_cap = len;
  return 0;
}

/* ---- records passed on ------------------------------------------------------------------------
 */

static unsigned fwd_hash(const struct fp* f, const struct pair_rec* p) {
  uint64_t k =
      ((uint64_t)(uint32_t)p->src * (uint64_t)f->nranks + (uint64_t)(uint32_t)p->dst) * FP_KINDS +
      (uint64_t)(uint32_t)p->kind;
  return (unsigned)(mix(0, k) & (uint64_t)(f->fwd_slots - 1));
}

/* The set's slot of p's pair: where it is, or the empty slot where it would go. */
static int fwd_slot(const struct fp* f, const struct pair_rec* p) {
  unsigned i = fwd_hash(f, p), mask = (unsigned)f->fwd_slots - 1;
  for (;;) {
    int32_t at = f->fwd_at[i];
    if (at == 0) return (int)i;
    const struct pair_rec* q = &f->fwd[at - 1];
    if (q->src == p->src && q->dst == p->dst && q->kind == p->kind) return (int)i;
    i = (i + 1) & mask;
  }
}

static void fwd_rehash(struct fp* f) {
  memset(f->fwd_at, 0, sizeof *f->fwd_at * (size_t)f->fwd_slots);
  for (int i = 0; i < f->nfwd; i++) f->fwd_at[fwd_slot(f, &f->fwd[i])] = i + 1;
}

/* Another rank's record to pass on: it replaces the one of its pair still waiting (keeping that
 * one's place), else joins the end; the list doubles when full. A record that finds no memory is
 * dropped, said once: a mismatch between those two ranks may then go unnoticed. */
static void fwd_keep(struct fp* f, const struct pair_rec* p) {
  if (f->fwd_slots > 0) {
    int s = fwd_slot(f, p);
    if (f->fwd_at[s] != 0) {
      f->fwd[f->fwd_at[s] - 1] = *p;
      return;
    }
  }
  if (f->nfwd == f->fwd_cap) {
    int cap = f->fwd_cap ? 2 * f->fwd_cap : 64;
    struct pair_rec* grown = cap > f->fwd_cap ? realloc(f->fwd, sizeof *grown * (size_t)cap) : NULL;
    int32_t* at = grown ? calloc(2 * (size_t)cap, sizeof *at) : NULL;
    if (grown) f->fwd = grown;
    if (at == NULL) {
      if (!f->fwd_warned)
        WARN("rank %d: no host memory to pass on the Send/Recv fingerprints of other ranks (%d "
             "kept): a mismatch between two of them may go unnoticed",
             f->rank, f->nfwd);
      f->fwd_warned = 1;
      return;
    }
    free(f->fwd_at);
    f->fwd_at = at, f->fwd_slots = 2 * cap, f->fwd_cap = cap;
    fwd_rehash(f);
  }
  f->fwd[f->nfwd] = *p;
  f->fwd_at[fwd_slot(f, p)] = ++f->nfwd;
}

/* The first n records were sent: the others move to the front. */
static void fwd_drop_first(struct fp* f, int n) {
  if (n <= 0) return;
  f->nfwd -= n;
  memmove(f->fwd, f->fwd + n, sizeof *f->fwd * (size_t)f->nfwd);
  fwd_rehash(f);
}

void fp_service(struct fp* f, double now, fp_send_fn send, void* ctx) {
  char text[TEXT_MAX];
  if (f == NULL || f->failed) return;
  pthread_mutex_lock(&f->mu);
  int bad = compare_pending(f, text);
  if (!bad && now - f->sent_at < FP_SEND_S) {
    pthread_mutex_unlock(&f->mu);
    return;
  }
  uint64_t last = ncoll_now(f), first = f->sent_ncoll + 1;
  if (last >= FP_BATCH && first < last - FP_BATCH + 1) first = last - FP_BATCH + 1;
  int nfwd = f->nfwd < FP_FWD_BATCH ? f->nfwd : FP_FWD_BATCH;
  int ncoll = (int)(last + 1 - first), npair = nfwd;
  for (int i = 0; f->pairs && i < FP_KINDS * f->nranks; i++)
    npair += f->snd[i].n != f->snd[i].sent_n;
  size_t len = sizeof(struct data_hdr) + (size_t)ncoll * sizeof(struct coll_rec) +
               (size_t)npair * sizeof(struct pair_rec);
  int have = !bad && (ncoll > 0 || npair > 0) && buf_reserve(f, len) == 0;
  if (have) {
    char* at = f->buf + sizeof(struct data_hdr);
    ncoll = 0; /* a record the user's thread is overwriting (it got FP_HIST ahead) is left out */
    for (uint64_t i = first; i <= last; i++) {
      struct coll_rec c = {.index = i};
      if (!chain_get(f, i, &c.chain)) continue;
      c.op = own_op(f, i);
      memcpy(at, &c, sizeof c), at += sizeof c, ncoll++;
    }
    for (int i = 0; f->pairs && i < FP_KINDS * f->nranks; i++) {
      struct send_side* s = &f->snd[i];
      if (s->n == s->sent_n) continue;
      struct pair_rec p = {f->rank, i % f->nranks, i / f->nranks, 0,
                           s->n,    s->chain,      s->bytes,      s->seq};
      memcpy(at, &p, sizeof p), at += sizeof p;
      s->sent_n = s->n;
    }
    if (nfwd > 0) { /* none: fwd may be NULL */
      memcpy(at, f->fwd, (size_t)nfwd * sizeof(struct pair_rec));
      at += (size_t)nfwd * sizeof(struct pair_rec);
    }
    struct data_hdr h = {f->rank, ncoll, npair, 0};
    memcpy(f->buf, &h, sizeof h);
    len = (size_t)(at - f->buf);
    fwd_drop_first(f, nfwd);
    f->sent_ncoll = last;
    f->sent_at = now;
  }
  pthread_mutex_unlock(&f->mu);
  if (bad)
    fail_all(f, f->rank, text, send, ctx);
  else if (have)
    (void)send(ctx, FP_MSG_DATA, f->buf, (uint32_t)len);
}

/* Checks a data message's shape; returns 0 when it is whole and consistent. */
static int data_ok(const struct fp* f, const void* body, uint32_t len, struct data_hdr* h) {
  if (len < sizeof *h) return -1;
  memcpy(h, body, sizeof *h);
  if (h->ncoll < 0 || h->npair < 0 || h->ncoll > FP_BATCH ||
      (int64_t)h->npair > (int64_t)FP_FWD_BATCH + (int64_t)FP_KINDS * f->nranks)
    return -1;
  size_t want = sizeof *h + (size_t)h->ncoll * sizeof(struct coll_rec) +
                (size_t)h->npair * sizeof(struct pair_rec);
  return want == len ? 0 : -1;
}

static int on_data(struct fp* f, const void* body, uint32_t len, char* text) {
  struct data_hdr h;
  int prev = (f->rank + f->nranks - 1) % f->nranks, bad = 0;
  uint64_t ncoll = ncoll_now(f);
  if (data_ok(f, body, len, &h) != 0) return 0; /* not from a peer of this version: ignored */
  const char* at = (const char*)body + sizeof h;
  for (int i = 0; i < h.ncoll && !bad; i++, at += sizeof(struct coll_rec)) {
    struct coll_rec c;
    memcpy(&c, at, sizeof c);
    if (c.index > ncoll) { /* ahead of this rank: later */
      if (f->npend == FP_PEND) memmove(f->pend, f->pend + 1, sizeof(c) * (FP_PEND - 1)), f->npend--;
      f->pend[f->npend++] = c;
    } else if (ncoll - c.index < FP_HIST) {
      bad = coll_compare(f, prev, &c, text);
    }
  }
  at = (const char*)body + sizeof h + (size_t)h.ncoll * sizeof(struct coll_rec);
  for (int i = 0; i < h.npair && !bad && f->pairs; i++, at += sizeof(struct pair_rec)) {
    struct pair_rec p;
    memcpy(&p, at, sizeof p);
    if (p.src < 0 || p.src >= f->nranks || p.dst < 0 || p.dst >= f->nranks || p.kind < 0 ||
        p.kind >= FP_KINDS || p.src == f->rank)
      continue;
    if (p.dst != f->rank) {
      fwd_keep(f, &p);
      continue;
    }
    int res = pair_compare(f, &p, text);
    if (res < 0) f->rcv[p.kind * f->nranks + p.src].pending = p;
    if (res < 0) f->rcv[p.kind * f->nranks + p.src].has_pending = 1;
    bad = res == 1;
  }
  return bad;
}

void fp_on_msg(struct fp* f, uint32_t type, const void* body, uint32_t len, fp_send_fn send,
               void* ctx) {
  char text[TEXT_MAX];
  if (f == NULL) return;
  if (type == FP_MSG_MISMATCH) {
    struct mismatch_msg m;
    if (len != sizeof m) return;
    memcpy(&m, body, sizeof m);
    m.text[TEXT_MAX - 1] = '\0';
    if (m.origin == f->rank || m.origin < 0 || m.origin >= f->nranks) return;
    (void)send(ctx, FP_MSG_MISMATCH, &m, sizeof m);
    fail_comm(f, m.text);
    return;
  }
  if (type != FP_MSG_DATA || f->failed) return;
  pthread_mutex_lock(&f->mu);
  int bad = on_data(f, body, len, text);
  pthread_mutex_unlock(&f->mu);
  if (bad) fail_all(f, f->rank, text, send, ctx);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The watch (watch.h): what it knows and does: the operations a comm was given, a dead peer
 * (told around the ring both ways, failing the comm when something waits), hang reports (a token
 * around the ring collecting every rank's state). The connections, the wire and the thread are
 * watch_link.c's (watch_impl.h). */
#include "core/watch.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "core/comm.h"
#include "util/param.h"
#include "core/watch_impl.h"
#include "core/watch_report.h"
#include "core/fingerprint.h"
#include "util/seqslot.h"
#include "os/socket.h"

/* The operations ring: written by the thread that runs the comm's operations without a lock (an
 * atomic exchange per operation was a measurable part of an 8-byte AllReduce), read by the watch
 * thread for its reports; each record is a seqlock (util/seqslot.h) of a few words (struct wrec),
 * stored one by one from the task: every store counts on the path of an 8-byte AllReduce. */
#define PUT(member, value) __atomic_store_n(&r->member, (value), __ATOMIC_RELAXED)
#define GET(member)        __atomic_load_n(&r->member, __ATOMIC_RELAXED)

static int reduces_op(enum coll_kind c) {
  return c == COLL_ALLREDUCE || c == COLL_REDUCE || c == COLL_REDUCESCATTER;
}

static void op_put(struct watch* w, const struct task* t, uint64_t coll_index, int p2p) {
  struct wrec* r = &w->ops[w->nops % WATCH_OPS];
  uint32_t v = seqslot_write_begin(&r->ver);
  uint32_t op = (uint32_t)(reduces_op(t->coll) ? t->op.kind + 1 : 0);
  PUT(root, t->root), PUT(seq, t->seq), PUT(coll_index, coll_index), PUT(count, t->count);
  PUT(what, (uint32_t)t->coll | (uint32_t)t->dtype << 8 | op << 16 | (uint32_t)p2p << 24);
  seqslot_write_end(&r->ver, v);
  __atomic_store_n(&w->nops, w->nops + 1, __ATOMIC_RELEASE);
}

/* Slot i's operation into *o; 0 when it was being written (*o is then of no use). */
static int op_get(struct watch* w, size_t i, struct wop* o) {
  const struct wrec* r = &w->ops[i];
  uint32_t v = seqslot_read_begin(&r->ver), what = GET(what);
  *o = (struct wop){.seq = GET(seq),
                    .coll_index = GET(coll_index),
                    .count = GET(count),
                    .coll = (int32_t)(what & 0xff),
                    .dtype = (int32_t)(what >> 8 & 0xff),
                    .op = (int32_t)(what >> 16 & 0xff) - 1,
                    .root = GET(root),
                    .p2p = (int32_t)(what >> 24 & 1)};
  return seqslot_read_end(&r->ver, v);
}

static void progress_of(struct watch* w, int fresh, uint64_t* issued, uint64_t* done) {
  struct ncclComm* comm = w->comm;
  if (comm->engine && comm->engine->progress) {
    comm->engine->progress(comm, fresh, issued, done);
    return;
  }
  *done = __atomic_load_n(&w->done, __ATOMIC_ACQUIRE); /* first: done <= issued */
  *issued = __atomic_load_n(&w->issued, __ATOMIC_ACQUIRE);
}

/* The oldest operation after `done` into *out; 0 if none is recorded. */
static int pending_op(struct watch* w, uint64_t done, struct wop* out) {
  uint64_t nops = __atomic_load_n(&w->nops, __ATOMIC_ACQUIRE), found = 0;
  struct wop o;
  for (uint64_t i = nops > WATCH_OPS ? nops - WATCH_OPS : 0; i < nops; i++)
    if (op_get(w, i % WATCH_OPS, &o) && o.seq > done && (!found || o.seq < out->seq))
      *out = o, found = 1;
  return (int)found;
}

/* The collective number coll_index into *out; 0 if it is not recorded. */
static int op_at_coll(struct watch* w, uint64_t coll_index, struct wop* out) {
  uint64_t nops = __atomic_load_n(&w->nops, __ATOMIC_ACQUIRE);
  struct wop o;
  for (uint64_t i = nops > WATCH_OPS ? nops - WATCH_OPS : 0; i < nops; i++)
    if (op_get(w, i % WATCH_OPS, &o) && !wop_is_p2p(&o) && o.coll_index == coll_index) {
      *out = o;
      return 1;
    }
  return 0;
}

/* The fingerprints' descriptions of this rank's collectives (core/fingerprint.c). */
static int fp_op(void* w, uint64_t coll_index, struct wop* out) {
  return op_at_coll(w, coll_index, out);
}

/* ---- a dead peer ---------------------------------------------------------------------------- */

static void tell_dead(struct watch* w, const struct dead_msg* d, int skip_dir) {
  for (int dir = 0; dir < 2; dir++)
    if (dir != skip_dir && w->link[dir].peer != d->rank)
      (void)watch_send(&w->link[dir], MSG_DEAD, w->comm->rank, d, sizeof *d);
}

/* The comm fails now if an operation waits; otherwise its next operation fails (watch_issue). */
static void fail_if_pending(struct watch* w) {
  struct ncclComm* comm = w->comm;
  uint64_t issued = 0, done = 0;
  progress_of(w, 1, &issued, &done);
  if (issued <= done || !comm->engine || !comm->engine->enqueue_only) return;
  char op[160] = "an operation";
  struct wop o;
  if (pending_op(w, done, &o)) wop_describe(&o, op, sizeof op);
  comm_fail(comm, ncclRemoteError, "%s; rank %d (host %s) was waiting in %s", w->dead_text,
            comm->rank, comm->peers[comm->rank].host, op);
}

static void peer_dead(struct watch* w, const struct dead_msg* d, int from_dir) {
  if (__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE)) return;
  snprintf(w->dead_text, sizeof w->dead_text, "peer rank %d (host %s, pid %d) %s", d->rank, d->host,
           d->pid, d->why);
  __atomic_store_n(&w->dead, 1, __ATOMIC_RELEASE);
  tell_dead(w, d, from_dir);
  fail_if_pending(w);
}

void watch_found_dead(struct watch* w, int rank, const char* why) {
  struct dead_msg d;
  memset(&d, 0, sizeof d);
  const struct peer_info* p = &w->comm->peers[rank];
  d.rank = rank, d.pid = p->pid;
  snprintf(d.host, sizeof d.host, "%s", p->host);
  snprintf(d.why, sizeof d.why, "%s", why);
  peer_dead(w, &d, -1);
}

/* ---- hang reports --------------------------------------------------------------------------- */

static void fill_state(struct watch* w, struct wstate* st, uint64_t key_coll) {
  uint64_t issued = 0, done = 0;
  progress_of(w, 1, &issued, &done);
  memset(st, 0, sizeof *st);
  st->filled = 1;
  st->issued = issued, st->done = done;
  st->ncoll = __atomic_load_n(&w->ncoll, __ATOMIC_RELAXED);
  st->has_op = key_coll && op_at_coll(w, key_coll, &st->op);
  st->has_wait = issued > done && pending_op(w, done, &st->wait);
}

static void log_report(struct watch* w, const struct hang_msg* m) {
  if (w->hang_key_logged == m->key) return;
  w->hang_key_logged = m->key;
  char text[1000];
  watch_report_text(w->comm, m, text, sizeof text);
  WARN("%s", text);
}

static void on_hang(struct watch* w, struct hang_msg* m, uint32_t len, int type) {
  struct ncclComm* comm = w->comm;
  if (len != hang_msg_bytes(comm->nranks) || m->nranks != comm->nranks || m->origin < 0 ||
      m->origin >= comm->nranks)
    return;
  if (type == MSG_HANG) {
    if (m->origin == comm->rank) { /* around once: every state is in */
      log_report(w, m);
      (void)watch_send(&w->link[OUT], MSG_REPORT, comm->rank, m, len);
      return;
    }
    fill_state(w, &m->st[comm->rank], m->stuck.coll_index);
    (void)watch_send(&w->link[OUT], MSG_HANG, comm->rank, m, len);
  } else if (m->origin != comm->rank) {
    log_report(w, m);
    (void)watch_send(&w->link[OUT], MSG_REPORT, comm->rank, m, len);
  }
}

static void check_hang(struct watch* w, double now) {
  int64_t limit = param_int(PARAM_HANG_TIMEOUT);
  uint64_t issued = 0, done = 0;
  progress_of(w, 0, &issued, &done);
  if (issued <= done || done != w->last_done) {
    w->last_done = done, w->last_move = now;
    return;
  }
  if (limit <= 0 || now - w->last_move < (double)limit) return;
  struct ncclComm* comm = w->comm;
  size_t len = hang_msg_bytes(comm->nranks);
  struct hang_msg* m = calloc(1, len);
  if (m == NULL) return;
  int found = pending_op(w, done, &m->stuck);
  m->key = wop_is_p2p(&m->stuck) ? (m->stuck.seq << 20 | (uint64_t)comm->rank) << 1
                                 : m->stuck.coll_index << 1 | 1;
  if (found && m->key != w->hang_key_sent && m->key != w->hang_key_logged) {
    w->hang_key_sent = m->key;
    m->origin = comm->rank, m->nranks = comm->nranks;
    m->waited_s = (uint32_t)(now - w->last_move);
    fill_state(w, &m->st[comm->rank], wop_is_p2p(&m->stuck) ? 0 : m->stuck.coll_index);
    if (comm->nranks == 1) {
      log_report(w, m);
    } else {
      (void)watch_send(&w->link[OUT], MSG_HANG, comm->rank, m, (uint32_t)len);
    }
  }
  free(m);
}

/* ---- the thread ----------------------------------------------------------------------------- */

static int fp_send(void* ctx, uint32_t type, const void* body, uint32_t len) {
  struct watch* w = ctx;
  return watch_send(&w->link[OUT], (int)type, w->comm->rank, body, len);
}

void watch_handle(struct watch* w, int dir, const struct watch_hdr* h, void* body) {
  struct watch_link* l = &w->link[dir];
  switch (h->type) {
  case MSG_BYE:
    l->bye = 1;
    break;
  case MSG_DEAD:
    if (h->len == sizeof(struct dead_msg)) {
      struct dead_msg d; /* its strings end inside it, whatever came */
      memcpy(&d, body, sizeof d);
      d.host[sizeof d.host - 1] = d.why[sizeof d.why - 1] = 0;
      if (d.rank >= 0 && d.rank < w->comm->nranks) peer_dead(w, &d, dir);
    }
    break;
  case MSG_HANG:
  case MSG_REPORT:
    on_hang(w, body, h->len, (int)h->type);
    break;
  default:
    fp_on_msg(w->fp, h->type, body, h->len, fp_send, w);
    break;
  }
}

/* Peers of this host whose process is gone (a zombie still counts as alive: its connections
 * closed anyway). */
static void check_pids(struct watch* w) {
  struct ncclComm* comm = w->comm;
  const struct peer_info* me = &comm->peers[comm->rank];
  for (int r = 0; r < comm->nranks && !__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE); r++) {
    const struct peer_info* p = &comm->peers[r];
    if (r == comm->rank || p->host_hash != me->host_hash || p->pid <= 0 || p->pid == me->pid)
      continue;
    if (kill(p->pid, 0) == -1 && errno == ESRCH)
      watch_found_dead(w, r, "is no longer running (its pid is gone)");
  }
}

void watch_service(struct watch* w, double now) {
  if (comm_aborted(w->comm)) return;
  for (int dir = 0; dir < 2; dir++) watch_link_service(w, dir, now);
  fp_service(w->fp, now, fp_send, w);
  /* A peer died while nothing waited: fail once something does (a kernel that started after the
   * news, a graph replay the enqueue path never sees). */
  if (__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE) &&
      !__atomic_load_n(&w->comm->failed, __ATOMIC_ACQUIRE))
    fail_if_pending(w);
  if (now - w->beat_sent >= WATCH_BEAT_S) {
    w->beat_sent = now;
    for (int dir = 0; dir < 2; dir++)
      (void)watch_send(&w->link[dir], MSG_BEAT, w->comm->rank, NULL, 0);
  }
  if (now - w->pid_check >= WATCH_BEAT_S) {
    w->pid_check = now;
    check_pids(w);
  }
  check_hang(w, now);
}

ncclResult_t watch_start(struct ncclComm* comm) {
  struct watch* w = NULL;
  NCCLCALLOC(w, 1);
  w->comm = comm;
  w->link[IN].fd = w->link[OUT].fd = -1;
  ncclResult_t res = ncclSuccess;
  if (comm->nranks > 1) NCCLCHECKGOTO(watch_connect(w), res, fail);
  w->fp = fp_create(comm);
  fp_set_ops(w->fp, fp_op, w);
  w->last_move = w->beat_sent = w->pid_check = sock_time_now();
  comm->watch = w;
  NCCLCHECKGOTO(watch_thread_add(w), res, fail);
  return ncclSuccess;
fail:
  comm->watch = NULL;
  fp_free(w->fp);
  for (int dir = 0; dir < 2; dir++) sock_close(&w->link[dir].fd);
  free(w);
  return res;
}

#define AFTER " after: "

void watch_stop(struct ncclComm* comm) {
  struct watch* w = comm->watch;
  if (w == NULL) return;
  watch_thread_remove(w);
  int clean = !comm_aborted(comm) && !__atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
  struct dead_msg d;
  memset(&d, 0, sizeof d);
  d.rank = comm->rank, d.pid = comm->peers ? comm->peers[comm->rank].pid : 0;
  if (comm->peers) snprintf(d.host, sizeof d.host, "%s", comm->peers[comm->rank].host);
  /* A comm aborted after a failure says which: the first cause in the chain (a rank that aborted
   * after another's abort passes on what that one said), so that every survivor names the rank
   * that died, not a neighbour that aborted for it. */
  const char* cause = NULL;
  if (__atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE)) {
    cause = comm->fail_msg;
    for (const char* p = strstr(cause, AFTER); p; p = strstr(p + 1, AFTER))
      cause = p + strlen(AFTER);
  }
  if (comm_aborted(comm) && cause && *cause) {
    size_t k = (size_t)snprintf(d.why, sizeof d.why, "aborted its communicator" AFTER);
    size_t room = sizeof d.why - k - 1, len = strlen(cause); /* cut to fit */
    memcpy(d.why + k, cause, len < room ? len : room);
  } else
    snprintf(d.why, sizeof d.why, "%s", comm_aborted(comm) ? "aborted its communicator" : "failed");
  for (int dir = 0; dir < 2; dir++) {
    if (clean)
      (void)watch_send(&w->link[dir], MSG_BYE, comm->rank, NULL, 0);
    else
      (void)watch_send(&w->link[dir], MSG_DEAD, comm->rank, &d, sizeof d);
    sock_close(&w->link[dir].fd);
    free(w->link[dir].buf);
  }
  fp_free(w->fp);
  free(w);
  comm->watch = NULL;
}

ncclResult_t watch_issue(struct ncclComm* comm, const struct task* tasks, int ntasks) {
  struct watch* w = comm->watch;
  if (w == NULL || ntasks == 0) return ncclSuccess;
  for (int i = 0; i < ntasks; i++) {
    const struct task* t = &tasks[i];
    int p2p = t->coll == COLL_SEND || t->coll == COLL_RECV;
    if (!p2p) __atomic_store_n(&w->ncoll, w->ncoll + 1, __ATOMIC_RELAXED);
    op_put(w, t, w->ncoll, p2p);
    if (t->seq > w->issued) __atomic_store_n(&w->issued, t->seq, __ATOMIC_RELEASE);
    if (w->fp) fp_issue(w->fp, t);
  }
  /* The CPU engine finds dead peers itself while it waits. */
  if (!__atomic_load_n(&w->dead, __ATOMIC_ACQUIRE) || !comm->engine->enqueue_only)
    return ncclSuccess;
  char op[160] = "an operation";
  struct wop o;
  if (op_get(w, (w->nops - 1) % WATCH_OPS, &o)) wop_describe(&o, op, sizeof op);
  comm_fail(comm, ncclRemoteError, "%s; rank %d (host %s) called %s after that", w->dead_text,
            comm->rank, comm->peers[comm->rank].host, op);
  return ncclRemoteError;
}

void watch_complete(struct ncclComm* comm) {
  struct watch* w = comm->watch;
  if (w == NULL) return;
  /* No lock: only this thread writes issued and done (every operation finishes per call). */
  __atomic_store_n(&w->done, __atomic_load_n(&w->issued, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
}

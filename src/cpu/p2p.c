/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point on the CPU engine: Send/Recv of a group, and AlltoAll(v), Gather and Scatter,
 * become a list of messages that one progress loop moves together, slot by slot, never blocking
 * on a single one.
 *
 * Connections: one FIFO per (peer, direction), distinct from the ring's, created the first time
 * a group needs it. Both sides take part in that group; all the group's connections are set up
 * together by cpu_connect (three phases that cannot deadlock, see cpu.h).
 *
 * Matching: messages to one peer are sent in the order the group lists them and the peer's
 * receives from me are taken in its order. Each slot carries its size and, in the top bit,
 * whether it ends the message, so a receiver notices a message of another size. Zero-byte
 * messages move nothing; a message to myself is a copy. */
#include <stdlib.h>
#include <string.h>
#include "boot/tags.h"
#include "util/check.h"
#include "cpu/cpu.h"

#define SLOT_LAST ((uint64_t)1 << 63)

struct msg {
  const struct task* task;
  char* buf; /* send: source; receive: destination */
  size_t bytes;
  int peer;
  int is_send;
  int next; /* next message of the same (peer, direction), or -1 */
};

struct chan {
  struct conn* c;
  int cur, last; /* message being moved, last queued; -1 when none */
  size_t done;
  int is_send;
};

struct batch {
  struct ncclComm* comm;
  struct msg* msgs;
  int n, cap;
  struct chan* chans; /* 2 * nranks: receives then sends, by peer */
};

/* One message of a task (core/task.c lists them in the order of their schedule). */
static ncclResult_t add_msg(void* ctx, const struct task* t, char* buf, size_t bytes, int peer,
                            int is_send) {
  struct batch* b = ctx;
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 64;
    struct msg* m = realloc(b->msgs, (size_t)cap * sizeof *m);
    if (m == NULL) {
      WARN("%s #%llu on rank %d: out of host memory listing its messages", coll_name(t->coll),
           (unsigned long long)t->seq, b->comm->rank);
      return ncclSystemError;
    }
    b->msgs = m, b->cap = cap;
  }
  b->msgs[b->n++] = (struct msg){t, buf, bytes, peer, is_send, -1};
  return ncclSuccess;
}

/* The messages of one task, in the order of its schedule. */
static ncclResult_t list_task(struct batch* b, const struct task* t) {
  return task_messages(t, b->comm->rank, b->comm->nranks, add_msg, b);
}

static void msg_view(const void* ctx, int i, struct task_msg_view* v) {
  const struct msg* m = &((const struct batch*)ctx)->msgs[i];
  *v = (struct task_msg_view){m->task, m->bytes, m->peer, m->is_send};
}

/* A send to myself and its receive (core's task_pair_self pairs them). */
static ncclResult_t self_copy(void* ctx, int send, int recv) {
  struct msg* ms = ((struct batch*)ctx)->msgs;
  if (ms[recv].buf != ms[send].buf) memmove(ms[recv].buf, ms[send].buf, ms[send].bytes);
  return ncclSuccess;
}

/* Create the connections the batch needs and does not have yet (see the top of the file). */
static ncclResult_t connect_peers(struct batch* b) {
  struct ncclComm* comm = b->comm;
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks, rank = comm->rank, nl = 0;
  struct cpu_link* links = NULL;
  NCCLCALLOC(links, 2 * (size_t)n);
  for (int d = 1; d < n; d++) {
    int to = (rank + d) % n, from = (rank - d + n) % n;
    if (b->chans[from].cur >= 0)
      links[nl++] = (struct cpu_link){&cc->p2p_recv[from],       from, 1, BOOT_TAG_CPU_P2P,
                                      &cc->p2p_recv_ready[from], 1};
    if (b->chans[n + to].cur >= 0)
      links[nl++] =
          (struct cpu_link){&cc->p2p_send[to], to, 0, BOOT_TAG_CPU_P2P, &cc->p2p_send_ready[to], 1};
  }
  ncclResult_t res = cpu_connect(comm, links, nl);
  free(links);
  return res;
}

static void advance(struct batch* b, struct chan* ch, size_t len) {
  ch->done += len;
  if (ch->done == b->msgs[ch->cur].bytes) ch->cur = b->msgs[ch->cur].next, ch->done = 0;
}

/* Move what the FIFO allows on one channel, at most a FIFO's worth; *moved counts slots. */
static ncclResult_t progress(struct batch* b, struct chan* ch, int* moved) {
  for (int k = 0; k < ch->c->nslots && ch->cur >= 0; k++) {
    struct msg* m = &b->msgs[ch->cur];
    size_t want = m->bytes - ch->done < ch->c->slot_size ? m->bytes - ch->done : ch->c->slot_size;
    uint64_t last = ch->done + want == m->bytes ? SLOT_LAST : 0;
    if (ch->is_send) {
      void* slot;
      if (!fifo_send_try(ch->c, &slot)) break;
      fifo_send_copy_post(ch->c, m->buf + ch->done, want | last);
    } else {
      const void* slot;
      size_t got;
      if (!fifo_recv_try(ch->c, &slot, &got)) break;
      if (got != (want | last)) {
        WARN("%s #%llu on rank %d: the message from rank %d does not have the %zu bytes this rank "
             "expects (a slot of %zu bytes%s arrived at offset %zu): the send and the receive "
             "were given different counts or datatypes",
             coll_name(m->task->coll), (unsigned long long)m->task->seq, b->comm->rank, m->peer,
             m->bytes, (size_t)(got & ~SLOT_LAST), (got & SLOT_LAST) ? " ending it" : "", ch->done);
        return ncclInvalidUsage;
      }
      memcpy(m->buf + ch->done, slot, want);
      fifo_recv_release(ch->c);
    }
    advance(b, ch, want);
    (*moved)++;
  }
  return ncclSuccess;
}

static ncclResult_t progress_all(struct batch* b) {
  int n = b->comm->nranks;
  struct fifo_idle idle = {0, 0, 0};
  for (;;) {
    int moved = 0, pending = -1;
    for (int i = 0; i < 2 * n; i++) {
      struct chan* ch = &b->chans[i];
      if (ch->cur < 0 || ch->c == NULL) continue;
      NCCLCHECK(progress(b, ch, &moved));
      if (ch->cur >= 0 && pending < 0) pending = i;
    }
    if (pending < 0) return ncclSuccess;
    if (moved) {
      fifo_idle_reset(&idle);
      continue;
    }
    if (!fifo_idle(&idle, b->chans[pending].c, b->chans[pending].is_send)) continue;
    for (int i = 0; i < 2 * n; i++) {
      struct chan* ch = &b->chans[i];
      if (ch->cur < 0 || ch->c == NULL) continue;
      struct wait_ctx w = {b->comm, b->msgs[ch->cur].task};
      NCCLCHECK(fifo_check(ch->c, &w));
    }
  }
}

static int overlaps(const struct msg* a, const struct msg* b) {
  return a->buf < b->buf + b->bytes && b->buf < a->buf + a->bytes;
}

/* A send whose source is also the destination of a receive of the same batch (in-place
 * SendRecv or AlltoAll) must not read data the receive has already overwritten: such sources
 * are copied aside first, into one buffer the caller frees. */
static ncclResult_t snapshot_overlaps(struct batch* b, char** stash) {
  size_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t off = 0;
    for (int i = 0; i < b->n; i++) {
      struct msg* s = &b->msgs[i];
      if (!s->is_send) continue;
      int hit = 0;
      for (int j = 0; j < b->n && !hit; j++) hit = !b->msgs[j].is_send && overlaps(s, &b->msgs[j]);
      if (!hit) continue;
      if (pass == 1) {
        memcpy(*stash + off, s->buf, s->bytes);
        s->buf = *stash + off;
      }
      off += s->bytes;
    }
    total = off;
    if (pass == 0) {
      if (total == 0) return ncclSuccess;
      if ((*stash = malloc(total)) == NULL) {
        WARN("rank %d: out of host memory copying %zu bytes of in-place sends aside", b->comm->rank,
             total);
        return ncclSystemError;
      }
    }
  }
  return ncclSuccess;
}

/* The profiler's ProxyOps (cpu/prof.h), if a task asks: one per message, in each FIFO's order,
 * of a slot per slot_size bytes (a message has at least one byte: task_messages). */
static void prof_batch(struct batch* b, struct task* const* tasks, int ntasks) {
  int any = 0, n = b->comm->nranks;
  for (int i = 0; i < ntasks && !any; i++) any = cpu_prof_wanted(b->comm, tasks[i]);
  for (int i = 0; i < 2 * n && any; i++) {
    struct chan* ch = &b->chans[i];
    for (int k = ch->c ? ch->cur : -1; k >= 0; k = b->msgs[k].next) {
      const struct msg* m = &b->msgs[k];
      cpu_prof_op(b->comm, m->task, ch->c, ch->is_send, 0,
                  (m->bytes + ch->c->slot_size - 1) / ch->c->slot_size);
    }
  }
}

/* Run the messages of `ntasks` tasks (Send, Recv, AlltoAll(v), Gather, Scatter) together. */
ncclResult_t cpu_p2p_run(struct ncclComm* comm, struct task* const* tasks, int ntasks) {
  struct cpu_comm* cc = comm->engine_state;
  int n = comm->nranks;
  ncclResult_t res = ncclSuccess;
  struct batch b = {comm, NULL, 0, 0, NULL};
  char* stash = NULL;
  NCCLCALLOC(b.chans, 2 * (size_t)n);
  for (int i = 0; i < ntasks; i++) NCCLCHECKGOTO(list_task(&b, tasks[i]), res, out);
  NCCLCHECKGOTO(snapshot_overlaps(&b, &stash), res, out);
  NCCLCHECKGOTO(task_pair_self(comm->rank, b.n, msg_view, self_copy, &b), res, out);
  for (int i = 0; i < 2 * n; i++) b.chans[i] = (struct chan){NULL, -1, -1, 0, i >= n};
  for (int i = 0; i < b.n; i++) {
    struct msg* m = &b.msgs[i];
    if (m->peer == comm->rank) continue;
    struct chan* ch = &b.chans[m->is_send ? n + m->peer : m->peer];
    if (ch->cur < 0)
      ch->cur = i;
    else
      b.msgs[ch->last].next = i;
    ch->last = i;
  }
  NCCLCHECKGOTO(connect_peers(&b), res, out);
  for (int p = 0; p < n; p++) {
    if (b.chans[p].cur >= 0) b.chans[p].c = &cc->p2p_recv[p];
    if (b.chans[n + p].cur >= 0) b.chans[n + p].c = &cc->p2p_send[p];
  }
  if (comm->prof) prof_batch(&b, tasks, ntasks);
  NCCLCHECKGOTO(progress_all(&b), res, out);
out:
  free(stash);
  free(b.msgs);
  free(b.chans);
  return res;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The sentences of the watch: an operation's description and a hang report. */
#include "core/watch_report.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/comm.h"
#include "util/dtype.h"

static const char* op_name(int op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return op >= 0 && op < (int)(sizeof names / sizeof names[0]) ? names[op] : "?";
}

void wop_describe(const struct wop* o, char* buf, size_t len) {
  const char* name = coll_name((enum coll_kind)o->coll);
  int n = snprintf(buf, len, "%s #%llu (count %llu, %s", name, (unsigned long long)o->seq,
                   (unsigned long long)o->count, dtype_name((ncclDataType_t)o->dtype));
  if (n < 0 || (size_t)n >= len) return;
  if (o->op >= 0) n += snprintf(buf + n, len - (size_t)n, ", %s", op_name(o->op));
  if ((size_t)n >= len) return;
  if (o->coll == COLL_BROADCAST || o->coll == COLL_REDUCE || o->coll == COLL_GATHER ||
      o->coll == COLL_SCATTER)
    n += snprintf(buf + n, len - (size_t)n, ", root %d", o->root);
  else if (o->p2p)
    n += snprintf(buf + n, len - (size_t)n, ", peer %d", o->root);
  if ((size_t)n < len) snprintf(buf + n, len - (size_t)n, ")");
}

/* The same call as far as every rank must agree: kind, count, type, op and root. */
static int same_call(const struct wop* a, const struct wop* b) {
  return a->coll == b->coll && a->count == b->count && a->dtype == b->dtype && a->op == b->op &&
         a->root == b->root;
}

struct text {
  char* buf;
  size_t len, at;
};

static void put(struct text* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text* t, const char* fmt, ...) {
  if (t->at + 1 >= t->len) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->at, t->len - t->at, fmt, ap);
  va_end(ap);
  if (n > 0) t->at += (size_t)n < t->len - t->at ? (size_t)n : t->len - t->at - 1;
}

#define LIST_MAX 8 /* ranks named per list; the rest are counted */

void watch_report_text(const struct ncclComm* comm, const struct hang_msg* m, char* buf,
                       size_t len) {
  struct text t = {buf, len, 0};
  buf[0] = 0;
  char what[160];
  wop_describe(&m->stuck, what, sizeof what);
  const struct peer_info* o = &comm->peers[m->origin];
  put(&t, "hang: %s on rank %d (host %s) has not finished for %u s.", what, m->origin, o->host,
      m->waited_s);
  int n = m->nranks, listed = 0, count = 0;
  if (!m->stuck.p2p) {
    for (int r = 0; r < n; r++) {
      if (!m->st[r].filled || m->st[r].ncoll >= m->stuck.coll_index) continue;
      if (count++ == 0) put(&t, " Ranks that have not called it:");
      if (listed++ < LIST_MAX)
        put(&t, " %d (host %s, pid %d, %llu collectives issued)", r, comm->peers[r].host,
            comm->peers[r].pid, (unsigned long long)m->st[r].ncoll);
    }
    if (count > LIST_MAX) put(&t, " and %d more", count - LIST_MAX);
    if (count) put(&t, ".");
    listed = count = 0;
    for (int r = 0; r < n; r++) {
      if (!m->st[r].filled || !m->st[r].has_op || same_call(&m->st[r].op, &m->stuck)) continue;
      if (count++ == 0) put(&t, " Mismatch: ranks asked for a different operation at that point:");
      if (listed++ < LIST_MAX) {
        wop_describe(&m->st[r].op, what, sizeof what);
        put(&t, " rank %d: %s;", r, what);
      }
    }
    if (count > LIST_MAX) put(&t, " and %d more", count - LIST_MAX);
  }
  put(&t, " Waiting:");
  listed = 0;
  for (int r = 0; r < n && listed < 2 * LIST_MAX; r++) {
    const struct wstate* s = &m->st[r];
    if (!s->filled) continue;
    listed++;
    if (s->has_wait) {
      wop_describe(&s->wait, what, sizeof what);
      put(&t, " rank %d in %s;", r, what);
    } else {
      put(&t, " rank %d idle (%llu collectives issued);", r, (unsigned long long)s->ncoll);
    }
  }
  put(&t, " (MONEL_HANG_TIMEOUT sets the wait before a report)");
}

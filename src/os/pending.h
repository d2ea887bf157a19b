/* SPDX-License-Identifier: BSD-3-Clause */
/* Connections accepted by a listener until each proved the job's key (os/auth.h) and sent its
 * hello (a fixed number of bytes): read without blocking, all at once, so neither a rank slow to
 * speak nor a stranger holds up the others. A stranger (a failed handshake, one too slow, or,
 * when the table is full, an unfinished connection that has sent nothing for PEND_IDLE_S, the one
 * that sent the fewest bytes, the oldest of those) is closed and logged (auth_stranger), so idle
 * connections can never keep out a rank of the job, which speaks at once. A connection still
 * speaking is never dropped to make room: while the table is full of them, new ones wait in the
 * listen backlog (a job of many ranks connecting at once loses none). */
#ifndef MONEL_OS_PENDING_H
#define MONEL_OS_PENDING_H
#include <stddef.h>
#include "os/auth.h"

#define PEND_HELLO_MAX 128
/* Silence after which an unfinished connection may give its place to a new one. */
#define PEND_IDLE_S 1.0

struct pend {
  int fd;
  double since; /* accepted at (sock_time_now) */
  double last;  /* when its last bytes arrived (or since) */
  struct auth_srv auth;
  size_t got; /* hello bytes in */
  unsigned char hello[PEND_HELLO_MAX];
};

struct pend_set {
  struct pend* p; /* the caller's table of max entries */
  int n, max;
  size_t want;              /* a hello's bytes (at most PEND_HELLO_MAX) */
  double limit_s;           /* longest time from accept to a complete hello */
  const unsigned char* key; /* NULL: no handshake */
  const char* where;        /* names the listener in the log */
  int accept_flags;         /* for accept4 (SOCK_NONBLOCK or 0); SOCK_CLOEXEC always */
};

static inline int pend_complete(const struct pend_set* s, const struct pend* p) {
  return p->got == s->want;
}
/* Accepts the connections waiting on lfd (non-blocking: sock_nonblock) while the table has room;
 * when it is full, one more per call in place of an entry silent for PEND_IDLE_S (none while
 * every unfinished entry is still speaking). Call again after pend_progress while lfd is
 * readable. */
void pend_accept(struct pend_set* s, int lfd);
/* Reads what arrived on every unfinished connection (the handshake, then the hello); drops and
 * logs those that failed or are older than limit_s. */
void pend_progress(struct pend_set* s);
/* Removes entry i, closing its fd unless `keep` (the caller took it). Entries after it move. */
void pend_remove(struct pend_set* s, int i, int keep);
void pend_close_all(struct pend_set* s);

#endif

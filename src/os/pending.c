/* SPDX-License-Identifier: BSD-3-Clause */
/* A listener's table of connections whose handshake and hello are still arriving (pending.h). */
#include "os/pending.h"
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

void pend_remove(struct pend_set* s, int i, int keep) {
  if (!keep) sock_close(&s->p[i].fd);
  memmove(&s->p[i], &s->p[i + 1], sizeof *s->p * (size_t)(s->n - i - 1));
  s->n--;
}

void pend_close_all(struct pend_set* s) {
  while (s->n > 0) pend_remove(s, s->n - 1, 0);
}

static void drop(struct pend_set* s, int i, const char* why) {
  auth_stranger(s->where, s->p[i].fd, why);
  pend_remove(s, i, 0);
}

/* The handshake, then the hello, as far as the bytes that arrived go: 1 more to come, 0
 * complete, -1 failed (*why set). */
static int step(struct pend_set* s, struct pend* e, const char** why) {
  int a = 0, stage;
  do {
    stage = e->auth.stage;
    a = s->key != NULL ? auth_srv_step(&e->auth, e->fd, s->key, why) : 0;
  } while (a == 1 && e->auth.stage != stage);
  if (a != 0) return a;
  while (e->got < s->want) {
    ssize_t k = recv(e->fd, e->hello + e->got, s->want - e->got, MSG_DONTWAIT);
    if (k > 0) {
      e->got += (size_t)k;
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 1;
    } else {
      *why = k == 0 ? "it closed the connection before its hello" : strerror(errno);
      return -1;
    }
  }
  return 0;
}

/* Bytes a connection sent so far: its handshake's, then its hello's. */
static size_t heard(const struct pend* e) {
  if (e->auth.stage == 0) return e->auth.got + e->got;
  return 4 + AUTH_NONCE_BYTES + (e->auth.stage == 1 ? e->auth.got : AUTH_MAC_BYTES) + e->got;
}

/* Room for one more: of the unfinished entries silent for PEND_IDLE_S, the one that sent the
 * fewest bytes goes, the oldest of those; a connection still speaking (a rank whose handshake is
 * on its way) keeps its place. */
static int room(struct pend_set* s) {
  int pick = -1;
  double now = sock_time_now();
  if (s->n < s->max) return 1;
  for (int i = 0; i < s->n; i++) { /* entries are in order of arrival */
    const struct pend* e = &s->p[i];
    if (pend_complete(s, e) || now - e->last < PEND_IDLE_S) continue;
    if (pick < 0 || heard(e) < heard(&s->p[pick])) pick = i;
  }
  if (pick < 0) return 0;
  drop(s, pick, "it had not finished its handshake and hello when more connections came");
  return 1;
}

void pend_accept(struct pend_set* s, int lfd) {
  int dropped = 0;
  for (;;) {
    if (s->n == s->max) { /* one drop per call: what arrived on the others is read in between */
      struct pollfd p = {lfd, POLLIN, 0};
      if (dropped || poll(&p, 1, 0) != 1 || !room(s)) return;
      dropped = 1;
    }
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | s->accept_flags);
    if (fd < 0) return;
    int one = 1;
    const char* why = NULL;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double now = sock_time_now();
    s->p[s->n] = (struct pend){.fd = fd, .since = now, .last = now};
    /* what arrived with it is read at once: a stranger that sent everything goes now */
    if (step(s, &s->p[s->n++], &why) < 0) drop(s, s->n - 1, why);
  }
}

void pend_progress(struct pend_set* s) {
  double now = sock_time_now();
  for (int i = 0; i < s->n; i++) {
    struct pend* e = &s->p[i];
    const char* why = NULL;
    if (pend_complete(s, e)) continue;
    size_t before = heard(e);
    int r = step(s, e, &why);
    if (heard(e) != before) e->last = now;
    if (r == 1 && now - e->since > s->limit_s) {
      why = "it did not complete its handshake and hello in time";
      r = -1;
    }
    if (r < 0) drop(s, i--, why);
  }
}

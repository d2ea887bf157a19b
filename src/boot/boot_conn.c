/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP bootstrap's connections between ranks (boot_impl.h). Every rank listens on its own
 * socket; a message to a peer goes over this rank's outgoing connection to it, opened on first
 * use (the handshake of os/auth.h, then a hello with the job secret). A progress thread per rank
 * accepts incoming connections, reads their handshakes and hellos without blocking, all at once
 * (os/pending.h: a peer slow to speak after connecting, on a loaded machine, is neither dropped
 * nor stalls the others; strangers are closed and logged, and idle ones cannot keep a peer out)
 * and hands every message that arrives to boot_msg.c's queue.
 *
 * Death: a receive that finds no message queued first opens this rank's outgoing connection to
 * the peer (a dead peer refuses it), and the progress thread watches every outgoing connection: a
 * peer that exits closes or resets it even when it never connected to us. A peer that closed or
 * refused our connection is declared gone once its own connection to us (which may still hold
 * messages it sent before exiting) reached EOF too, or, when it never connected to us, once no
 * incoming connection is left unidentified (or SETTLE_S passed). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "boot/boot_impl.h"
#include "util/check.h"
#include "util/log.h"

#define PEER_CONNECT_S 5.0
/* After a peer closed our connection: longest wait for an unidentified incoming connection that
 * might be its own connection to us. */
#define SETTLE_S 2.0

void boot_sock_wake(struct boot_sock* b) {
  uint64_t one = 1;
  if (write(b->wake_fd, &one, sizeof(one)) < 0) { /* the counter cannot overflow in practice */
  }
}

void boot_sock_peer_dead(struct boot_sock* b, int peer, enum sock_err why) {
  pthread_mutex_lock(&b->mu);
  if (!b->peers[peer].dead) b->peers[peer].dead = 1, b->peers[peer].why = why;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

/* A connection that proved the key and sent its hello: it becomes its rank's in_fd, or is
 * dropped with a WARN. */
static void incoming_take(struct boot_sock* b, int fd, const struct peer_hello* h) {
  if (h->magic != BOOT_MAGIC_TCP || h->secret != b->secret || h->rank < 0 ||
      h->rank >= b->base.nranks) {
    WARN("bootstrap rank %d: dropped an incoming connection that is not a peer of this job (bad "
         "hello); check that nothing else connects to the bootstrap ports",
         b->base.rank);
    close(fd);
    return;
  }
  pthread_mutex_lock(&b->mu);
  if (b->peers[h->rank].in_fd < 0) b->peers[h->rank].in_fd = fd, fd = -1;
  pthread_mutex_unlock(&b->mu);
  if (fd >= 0) {
    WARN("bootstrap rank %d: rank %d connected twice; dropped the second connection", b->base.rank,
         h->rank);
    close(fd);
  }
}

/* Accept what is waiting, read what arrived of every handshake and hello (os/pending.h: strangers
 * and connections silent too long are dropped and logged) and take the complete ones. */
static void incoming_step(struct boot_sock* b) {
  pend_accept(&b->inc, b->listen_fd);
  pend_progress(&b->inc);
  for (int i = 0; i < b->inc.n; i++) {
    if (!pend_complete(&b->inc, &b->inc.p[i])) continue;
    struct peer_hello h;
    int fd = b->inc.p[i].fd;
    memcpy(&h, b->inc.p[i].hello, sizeof h);
    pend_remove(&b->inc, i--, 1);
    incoming_take(b, fd, &h);
  }
}

/* The peer closed our outgoing connection, or refused to open one: it exited (or freed its
 * bootstrap). Messages it sent before may still be on its own connection to us (perhaps not
 * accepted yet): take those in now; settle() decides. */
static void out_closed(struct boot_sock* b, int p, enum sock_err why) {
  b->peers[p].out_eof = 1;
  b->peers[p].out_eof_at = sock_time_now();
  b->peers[p].out_why = why;
  incoming_step(b);
}

/* Declare gone the peers that closed our connection and have no connection to us that could still
 * deliver messages: when its own connection exists, its EOF decides (read_message). Returns 1
 * while some peer is undecided (the caller polls again soon). */
static int settle(struct boot_sock* b) {
  int undecided = 0;
  double now = sock_time_now();
  for (int p = 0; p < b->base.nranks; p++) {
    struct peer* q = &b->peers[p];
    if (!q->out_eof || q->in_fd >= 0 || q->dead) continue;
    if (b->inc.n == 0 || now - q->out_eof_at > SETTLE_S)
      boot_sock_peer_dead(b, p, q->out_why);
    else
      undecided = 1;
  }
  return undecided;
}

/* pollfd entries: [0] wake, [1] listen, then per peer in_fd / out_fd, then incoming. */
void* boot_sock_progress(void* arg) {
  struct boot_sock* b = arg;
  int n = b->base.nranks, base = 2 + 2 * n, wait_ms = -1;
  struct pollfd* fds = calloc((size_t)(base + b->inc.max), sizeof(*fds));
  if (fds == NULL) return NULL;
  while (!atomic_load(&b->stop) && !ABORTED(b)) {
    fds[0] = (struct pollfd){.fd = b->wake_fd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = b->listen_fd, .events = POLLIN};
    pthread_mutex_lock(&b->mu);
    for (int p = 0; p < n; p++) {
      fds[2 + 2 * p] = (struct pollfd){.fd = b->peers[p].in_fd, .events = POLLIN};
      int watch = b->peers[p].out_fd >= 0 && !b->peers[p].dead && !b->peers[p].out_eof;
      fds[3 + 2 * p] = (struct pollfd){.fd = watch ? b->peers[p].out_fd : -1, .events = POLLIN};
    }
    pthread_mutex_unlock(&b->mu);
    int ninc = b->inc.n; /* all unfinished: complete ones were taken */
    for (int i = 0; i < ninc; i++)
      fds[base + i] = (struct pollfd){.fd = b->inc.p[i].fd, .events = POLLIN};
    if (ninc > 0 && wait_ms < 0) wait_ms = 1000; /* to drop silent connections */
    if (poll(fds, (nfds_t)(base + ninc), wait_ms) < 0 && errno != EINTR) break;
    if (atomic_load(&b->stop) || ABORTED(b)) break;
    if (fds[0].revents) {
      uint64_t v;
      if (read(b->wake_fd, &v, sizeof(v)) < 0) { /* spurious: nothing to drain */
      }
    }
    incoming_step(b);
    for (int p = 0; p < n; p++) {
      if (fds[2 + 2 * p].revents) boot_sock_read_msg(b, p);
      if (fds[3 + 2 * p].revents) { /* a peer never writes on our outgoing connection: EOF */
        char c;
        ssize_t k = recv(fds[3 + 2 * p].fd, &c, 1, MSG_DONTWAIT);
        if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR)))
          out_closed(b, p, k == 0 ? SOCK_EOF : SOCK_RESET);
      }
      if (!b->peers[p].out_eof && __atomic_load_n(&b->peers[p].refused, __ATOMIC_ACQUIRE))
        out_closed(b, p, b->peers[p].refused_why);
    }
    wait_ms = settle(b) ? 100 : -1;
  }
  free(fds);
  return NULL;
}

void boot_sock_peer_str(struct boot_sock* b, int p, char* buf, size_t len) {
  sock_addr_to_str(&b->addrs[p], buf, len);
}

/* Open the outgoing connection to peer p if needed; call with send_mu held. A peer that cannot be
 * reached is gone: the failure is recorded for the progress thread, which declares the peer dead
 * once the messages it may have sent before are in (settle). `quiet`: the caller reports. */
ncclResult_t boot_sock_connect(struct boot_sock* b, int p, int quiet) {
  char where[SOCK_ADDR_STRLEN];
  enum sock_err err = SOCK_OK;
  int fd = -1;
  ncclResult_t res = ncclSuccess;
  if (b->peers[p].out_fd >= 0) return ncclSuccess;
  if (__atomic_load_n(&b->peers[p].refused, __ATOMIC_ACQUIRE)) {
    err = b->peers[p].refused_why;
    res = ncclRemoteError;
    goto fail;
  }
  /* peers listen since before the rendezvous: a refusal that lasts means the peer is gone */
  double dl = sock_time_now() + (b->timeout < PEER_CONNECT_S ? (double)b->timeout : PEER_CONNECT_S);
  struct peer_hello h = {.magic = BOOT_MAGIC_TCP, .rank = b->base.rank, .secret = b->secret};
  const char* why = NULL;
  res = sock_conn_open(&b->addrs[p], dl, &b->aborted, &fd, &err);
  if (res == ncclSuccess && auth_client(fd, b->base.key, dl, &b->aborted, &why) != ncclSuccess) {
    /* the peer died meanwhile, or another process took its port: either way it is gone */
    boot_sock_peer_str(b, p, where, sizeof(where));
    INFO(LOG_BOOTSTRAP, "bootstrap rank %d: peer rank %d at %s failed the handshake: %s",
         b->base.rank, p, where, why);
    res = ncclRemoteError, err = SOCK_EOF;
  }
  if (res == ncclSuccess) res = sock_send_all(fd, &h, sizeof(h), dl, &b->aborted, &err);
  if (res != ncclSuccess) {
    sock_close(&fd);
    if (err != SOCK_SYSERR && !ABORTED(b)) {
      b->peers[p].refused_why = err;
      __atomic_store_n(&b->peers[p].refused, 1, __ATOMIC_RELEASE);
      boot_sock_wake(b);
    }
    goto fail;
  }
  pthread_mutex_lock(&b->mu);
  b->peers[p].out_fd = fd;
  pthread_mutex_unlock(&b->mu);
  boot_sock_wake(b); /* let the progress thread watch it */
  return ncclSuccess;
fail:
  if (ABORTED(b)) return ncclRemoteError;
  if (!quiet || err == SOCK_SYSERR) {
    boot_sock_peer_str(b, p, where, sizeof(where));
    WARN("bootstrap rank %d cannot connect to peer rank %d at %s: %s; the peer process exited or "
         "the network blocks the port",
         b->base.rank, p, where, err == SOCK_SYSERR ? strerror(errno) : sock_err_str(err));
  }
  return res;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP bootstrap's messages (boot_impl.h): each is a header (secret, source rank, kind, tag,
 * size) and a body of at most BOOT_MSG_MAX bytes on the sender's outgoing connection
 * (boot_conn.c). The progress thread reads every incoming message into one queue, so sends never
 * wait for the matching receive and messages of tags not asked for yet wait there; a receive
 * takes the first of its source, kind and tag. Receives from a gone peer fail naming it; messages
 * it sent before are still delivered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "boot/boot_impl.h"
#include "util/check.h"
#include "util/log.h"

#define BOOT_MSG_MAX ((uint64_t)1 << 30)

struct msg_hdr {
  uint64_t secret;
  int32_t src;
  int32_t tag;
  uint32_t kind;
  uint32_t pad;
  uint64_t size;
};

void boot_sock_enqueue(struct boot_sock* b, struct sock_msg* m) {
  pthread_mutex_lock(&b->mu);
  if (b->tail != NULL)
    b->tail->next = m;
  else
    b->head = m;
  b->tail = m;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

/* Read one message from peer p's incoming connection into the queue. */
void boot_sock_read_msg(struct boot_sock* b, int p) {
  struct msg_hdr h;
  struct sock_msg* m = NULL;
  enum sock_err err = SOCK_OK;
  int fd = b->peers[p].in_fd;
  double dl = sock_time_now() + (double)b->timeout;
  if (sock_recv_all(fd, &h, sizeof(h), dl, &b->aborted, &err) != ncclSuccess) goto gone;
  if (h.secret != b->secret || h.src != p || h.size > BOOT_MSG_MAX) {
    WARN("bootstrap rank %d: malformed message on the connection from rank %d (size %llu, max "
         "%llu); dropped the connection",
         b->base.rank, p, (unsigned long long)h.size, (unsigned long long)BOOT_MSG_MAX);
    err = SOCK_SYSERR;
    goto gone;
  }
  m = malloc(sizeof(*m) + h.size);
  if (m == NULL) {
    WARN("bootstrap rank %d: out of host memory for a %llu-byte message from rank %d", b->base.rank,
         (unsigned long long)h.size, p);
    err = SOCK_SYSERR;
    goto gone;
  }
  m->next = NULL, m->src = p, m->kind = (int)h.kind, m->tag = h.tag, m->size = h.size;
  if (sock_recv_all(fd, m->data, h.size, dl, &b->aborted, &err) != ncclSuccess) goto gone;
  boot_sock_enqueue(b, m);
  return;
gone:
  free(m);
  pthread_mutex_lock(&b->mu);
  b->peers[p].in_fd = -1;
  pthread_mutex_unlock(&b->mu);
  close(fd);
  boot_sock_peer_dead(b, p, err);
}

static struct sock_msg* msg_new(int src, int kind, int tag, const void* data, size_t size) {
  struct sock_msg* m = malloc(sizeof(*m) + size);
  if (m == NULL) return NULL;
  m->next = NULL, m->src = src, m->kind = kind, m->tag = tag, m->size = size;
  if (size > 0) memcpy(m->data, data, size);
  return m;
}

ncclResult_t boot_sock_send(struct boot* base, int p, int kind, int tag, const void* data,
                            size_t size) {
  struct boot_sock* b = (struct boot_sock*)base;
  ncclResult_t res = ncclSuccess;
  enum sock_err err = SOCK_OK;
  char where[SOCK_ADDR_STRLEN];
  if (ABORTED(b)) return ncclRemoteError;
  if (size > BOOT_MSG_MAX) {
    WARN("bootstrap rank %d: a %zu-byte message is larger than the bootstrap limit of %llu bytes",
         base->rank, size, (unsigned long long)BOOT_MSG_MAX);
    return ncclInvalidArgument;
  }
  if (p == base->rank) {
    struct sock_msg* m = msg_new(p, kind, tag, data, size);
    if (m == NULL) {
      WARN("out of host memory buffering a %zu-byte bootstrap message", size);
      return ncclSystemError;
    }
    boot_sock_enqueue(b, m);
    return ncclSuccess;
  }
  struct msg_hdr h = {
      .secret = b->secret, .src = base->rank, .tag = tag, .kind = (uint32_t)kind, .size = size};
  pthread_mutex_lock(&b->peers[p].send_mu);
  NCCLCHECKGOTO(boot_sock_connect(b, p, 0), res, out);
  double dl = sock_time_now() + (double)b->timeout;
  res = sock_send_all(b->peers[p].out_fd, &h, sizeof(h), dl, &b->aborted, &err);
  if (res == ncclSuccess)
    res = sock_send_all(b->peers[p].out_fd, data, size, dl, &b->aborted, &err);
  if (res != ncclSuccess && !ABORTED(b)) {
    boot_sock_peer_str(b, p, where, sizeof(where));
    WARN("bootstrap rank %d: sending %zu bytes (tag %d) to peer rank %d at %s failed: %s; the peer "
         "process exited or was killed",
         base->rank, size, tag, p, where, sock_err_str(err));
  } /* the progress thread sees the broken connection too and declares the peer gone */
  if (ABORTED(b)) res = ncclRemoteError;
out:
  pthread_mutex_unlock(&b->peers[p].send_mu);
  return res;
}

static struct sock_msg* take(struct boot_sock* b, int src, int kind, int tag) {
  struct sock_msg* prev = NULL;
  for (struct sock_msg* m = b->head; m != NULL; prev = m, m = m->next) {
    if (m->src != src || m->kind != kind || m->tag != tag) continue;
    if (prev != NULL)
      prev->next = m->next;
    else
      b->head = m->next;
    if (b->tail == m) b->tail = prev;
    return m;
  }
  return NULL;
}

ncclResult_t boot_sock_recv(struct boot* base, int p, int kind, int tag, void* data, size_t size) {
  struct boot_sock* b = (struct boot_sock*)base;
  struct sock_msg* m = NULL;
  ncclResult_t res = ncclSuccess;
  int dead = 0;
  enum sock_err why = SOCK_OK;
  char where[SOCK_ADDR_STRLEN];
  pthread_mutex_lock(&b->mu);
  m = take(b, p, kind, tag);
  pthread_mutex_unlock(&b->mu);
  if (m == NULL && p != base->rank) { /* an outgoing connection tells us when the peer dies */
    pthread_mutex_lock(&b->peers[p].send_mu);
    res = boot_sock_connect(b, p, 1);
    pthread_mutex_unlock(&b->peers[p].send_mu);
    /* a peer that cannot be reached is declared dead by the progress thread, after the
     * messages it sent before exiting are in */
    if (res != ncclSuccess && res != ncclRemoteError) return res;
  }
  pthread_mutex_lock(&b->mu);
  while (m == NULL && (m = take(b, p, kind, tag)) == NULL && !ABORTED(b) && !b->peers[p].dead)
    pthread_cond_wait(&b->cv, &b->mu);
  dead = b->peers[p].dead, why = b->peers[p].why;
  pthread_mutex_unlock(&b->mu);
  if (m == NULL && ABORTED(b)) return ncclRemoteError;
  if (m == NULL && dead) {
    boot_sock_peer_str(b, p, where, sizeof(where));
    WARN("bootstrap rank %d: peer rank %d (%s) is gone while rank %d waited for its message (tag "
         "%d): %s; the process exited or was killed",
         base->rank, p, where, base->rank, tag, sock_err_str(why));
    return ncclRemoteError;
  }
  if (m == NULL) return ncclRemoteError;
  return boot_msg_deliver(base, p, tag, m, m->data, m->size, data, size);
}

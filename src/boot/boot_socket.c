/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP bootstrap's handle (boot_impl.h): a rank presents itself to the root (boot_root.c)
 * and receives every rank's address, then starts its progress thread (boot_conn.c); messages
 * between ranks are boot_msg.c's. boot_abort shuts every socket down, which wakes every blocked
 * call. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "boot/boot_impl.h"
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

static void sock_boot_abort(struct boot* base) {
  struct boot_sock* b = (struct boot_sock*)base;
  pthread_mutex_lock(&b->mu);
  __atomic_store_n(&b->aborted, 1, __ATOMIC_SEQ_CST);
  for (int p = 0; p < base->nranks; p++) {
    if (b->peers[p].in_fd >= 0) shutdown(b->peers[p].in_fd, SHUT_RDWR);
    if (b->peers[p].out_fd >= 0) shutdown(b->peers[p].out_fd, SHUT_RDWR);
  }
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  boot_sock_wake(b);
}

static void sock_boot_free(struct boot* base) {
  struct boot_sock* b = (struct boot_sock*)base;
  if (b->progress_started) {
    atomic_store(&b->stop, 1);
    boot_sock_wake(b);
    pthread_join(b->progress, NULL);
  }
  for (int p = 0; b->peers != NULL && p < base->nranks; p++) {
    sock_close(&b->peers[p].in_fd);
    sock_close(&b->peers[p].out_fd);
    pthread_mutex_destroy(&b->peers[p].send_mu);
  }
  if (b->inc.p != NULL) pend_close_all(&b->inc);
  free(b->inc.p);
  for (struct sock_msg *m = b->head, *nx; m != NULL; m = nx) {
    nx = m->next;
    free(m);
  }
  sock_close(&b->listen_fd);
  sock_close(&b->wake_fd);
  boot_root_join(b->root);
  boot_root_release(b->secret);
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->cv);
  free(b->peers);
  free(b->addrs);
  free(b);
}

static const struct boot_ops sock_ops = {.send = boot_sock_send,
                                         .recv = boot_sock_recv,
                                         .abort = sock_boot_abort,
                                         .free = sock_boot_free};

static ncclResult_t sock_boot_alloc(int rank, int nranks, uint64_t secret, struct boot_sock** out) {
  struct boot_sock* b = calloc(1, sizeof(*b));
  if (b == NULL) goto oom;
  b->base.ops = &sock_ops, b->base.rank = rank, b->base.nranks = nranks;
  b->secret = secret;
  b->timeout = param_int(PARAM_BOOT_TIMEOUT);
  b->listen_fd = -1;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  b->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  b->peers = calloc((size_t)nranks, sizeof(*b->peers));
  b->addrs = calloc((size_t)nranks, sizeof(*b->addrs));
  snprintf(b->inc_where, sizeof b->inc_where, "bootstrap rank %d", rank);
  b->inc = (struct pend_set){.p = calloc((size_t)nranks + INCOMING_SPARE, sizeof(struct pend)),
                             .max = nranks + INCOMING_SPARE,
                             .want = sizeof(struct peer_hello),
                             .limit_s = BOOT_HELLO_WAIT_S,
                             .key = b->base.key,
                             .where = b->inc_where};
  if (b->peers == NULL || b->addrs == NULL || b->inc.p == NULL || b->wake_fd < 0) {
    b->base.nranks = 0; /* no per-peer state was initialized */
    sock_boot_free(&b->base);
    goto oom;
  }
  for (int p = 0; p < nranks; p++) {
    pthread_mutex_init(&b->peers[p].send_mu, NULL);
    b->peers[p].in_fd = b->peers[p].out_fd = -1;
  }
  *out = b;
  return ncclSuccess;
oom:
  WARN("bootstrap rank %d: out of host memory or file descriptors for %d ranks", rank, nranks);
  return ncclSystemError;
}

/* Present ourselves to the root and receive the table of all ranks' addresses. */
static ncclResult_t rendezvous(struct boot_sock* b, const struct boot_id* id,
                               const union sock_addr* me) {
  ncclResult_t res = ncclSuccess;
  enum sock_err err = SOCK_OK;
  int fd = -1, r = b->base.rank, n = b->base.nranks;
  char root[SOCK_ADDR_STRLEN], text[BOOT_REPLY_TEXT_MAX + 1];
  struct boot_hello h = {
      .magic = BOOT_MAGIC_TCP, .secret = b->secret, .rank = r, .nranks = n, .addr = *me};
  uint32_t len = sizeof(h);
  struct boot_reply rep;
  sock_addr_to_str(&id->root, root, sizeof(root));
  double dl = sock_time_now() + (double)b->timeout;
  if (sock_conn_open(&id->root, dl, NULL, &fd, &err) != ncclSuccess) {
    WARN("bootstrap rank %d of %d cannot reach the bootstrap root at %s within %lld s: %s; check "
         "that rank 0 / the process that made the unique id is running and reachable",
         r, n, root, (long long)b->timeout,
         err == SOCK_SYSERR ? strerror(errno) : sock_err_str(err));
    res = ncclSystemError;
    goto out;
  }
  dl = sock_time_now() + (double)b->timeout + 10.0; /* the root answers by its own deadline */
  const char* why = NULL;
  if (auth_client(fd, b->base.key, dl, NULL, &why) != ncclSuccess) {
    WARN("bootstrap rank %d of %d: the root at %s failed the handshake: %s; pass every rank the "
         "unique id (or MONEL_JOB_SECRET) of this job",
         r, n, root, why);
    res = ncclSystemError;
    goto out;
  }
  if (sock_send_all(fd, &len, sizeof(len), dl, NULL, &err) != ncclSuccess ||
      sock_send_all(fd, &h, sizeof(h), dl, NULL, &err) != ncclSuccess ||
      sock_recv_all(fd, &rep, sizeof(rep), dl, NULL, &err) != ncclSuccess)
    goto lost;
  if (rep.magic != BOOT_MAGIC_TCP || rep.nranks != (uint32_t)n ||
      rep.text_len > BOOT_REPLY_TEXT_MAX) {
    err = SOCK_SYSERR;
    goto lost;
  }
  if (rep.status == BOOT_REPLY_TIMEOUT) {
    if (sock_recv_all(fd, text, rep.text_len, dl, NULL, &err) != ncclSuccess) goto lost;
    text[rep.text_len] = '\0';
    WARN("bootstrap rendezvous timed out after %lld s: rank(s) %s of %d never arrived at the root "
         "%s; start every rank or raise MONEL_BOOT_TIMEOUT",
         (long long)b->timeout, text, n, root);
    res = ncclSystemError;
    goto out;
  }
  if (sock_recv_all(fd, b->addrs, sizeof(*b->addrs) * (size_t)n, dl, NULL, &err) != ncclSuccess)
    goto lost;
  goto out;
lost:
  WARN("bootstrap rank %d of %d: the root at %s did not answer (%s); it rejected this rank (wrong "
       "unique id or nranks?) or exited; see the root's log",
       r, n, root, err == SOCK_SYSERR ? "malformed answer" : sock_err_str(err));
  res = ncclSystemError;
out:
  sock_close(&fd);
  return res;
}

ncclResult_t boot_socket_init(const struct boot_id* id, int rank, int nranks, struct boot** out) {
  struct boot_sock* b = NULL;
  ncclResult_t res = ncclSuccess;
  union sock_addr me, root_addr = id->root;
  char str[SOCK_ADDR_STRLEN];
  NCCLCHECK(sock_boot_alloc(rank, nranks, id->secret, &b));
  memcpy(b->base.key, id->key, sizeof b->base.key);
  NCCLCHECKGOTO(sock_iface_find(&me, NULL, 0), res, out);
  NCCLCHECKGOTO(sock_listen_open(&me, &b->listen_fd), res, out);
  SYSCHECKGOTO(sock_nonblock(b->listen_fd), "fcntl(O_NONBLOCK)", res, out);
  if ((id->flags & BOOT_FLAG_COMM_ID) && rank == 0) {
    res = boot_root_start(&root_addr, id->secret, id->key, 0, &b->root);
    if (res != ncclSuccess) {
      char why[256];
      snprintf(why, sizeof why, "%s", log_last_error());
      WARN("NCCL_COMM_ID=%s: rank 0 cannot run the bootstrap root there (%s): it must name an "
           "address of rank 0's host and a port free on it",
           param_str(PARAM_COMM_ID), why);
      goto out;
    }
  }
  NCCLCHECKGOTO(rendezvous(b, id, &me), res, out);
  if (pthread_create(&b->progress, NULL, boot_sock_progress, b) != 0) {
    WARN("bootstrap rank %d: cannot start its progress thread; raise the thread limit", rank);
    res = ncclSystemError;
    goto out;
  }
  b->progress_started = 1;
  INFO(LOG_BOOTSTRAP, "bootstrap rank %d of %d: listening at %s, all ranks known", rank, nranks,
       sock_addr_to_str(&me, str, sizeof(str)));
  *out = &b->base;
  b = NULL;
out:
  if (b != NULL) sock_boot_free(&b->base);
  return res;
}

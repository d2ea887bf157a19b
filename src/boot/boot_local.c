/* SPDX-License-Identifier: BSD-3-Clause */
/* In-process bootstrap: ranks that are threads of one process meet in a refcounted shared object
 * (one mutex, one condition variable, one mailbox per rank). The id carries its pointer. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "boot/boot_impl.h"
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

struct local_msg {
  struct local_msg* next;
  int src, kind, tag;
  size_t size;
  char data[];
};

struct local_shared {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int nranks;
  int refs; /* one per rank; the last boot_free releases the object */
  int joined;
  char* present;
  struct local_msg** head; /* mailbox per destination rank, FIFO */
  struct local_msg** tail;
};

struct boot_local {
  struct boot base;
  struct local_shared* sh;
  int aborted; /* under sh->mu */
};

ncclResult_t boot_id_create_local(ncclUniqueId* id, int nranks) {
  struct local_shared* sh = NULL;
  struct boot_id b;
  if (id == NULL || nranks < 1) {
    WARN("bootstrap: boot_id_create_local needs an id and nranks >= 1 (got %d)", nranks);
    return ncclInvalidArgument;
  }
  NCCLCALLOC(sh, 1);
  sh->present = calloc((size_t)nranks, 1);
  sh->head = calloc((size_t)nranks, sizeof(*sh->head));
  sh->tail = calloc((size_t)nranks, sizeof(*sh->tail));
  if (sh->present == NULL || sh->head == NULL || sh->tail == NULL) {
    free(sh->present), free(sh->head), free(sh->tail), free(sh);
    WARN("out of host memory creating the in-process bootstrap for %d ranks", nranks);
    return ncclSystemError;
  }
  pthread_mutex_init(&sh->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&sh->cv, &ca);
  pthread_condattr_destroy(&ca);
  sh->nranks = nranks;
  sh->refs = nranks;
  memset(&b, 0, sizeof(b));
  b.magic = BOOT_MAGIC_LOCAL;
  b.shared = sh;
  b.nranks = nranks;
  if (auth_key_random(b.key) != ncclSuccess) memset(b.key, 0, sizeof b.key);
  memset(id, 0, sizeof(*id));
  memcpy(id, &b, sizeof(b));
  return ncclSuccess;
}

static void shared_release(struct local_shared* sh) {
  pthread_mutex_lock(&sh->mu);
  int last = --sh->refs == 0;
  pthread_mutex_unlock(&sh->mu);
  if (!last) return;
  for (int r = 0; r < sh->nranks; r++) {
    for (struct local_msg *m = sh->head[r], *nx; m != NULL; m = nx) {
      nx = m->next;
      free(m);
    }
  }
  pthread_mutex_destroy(&sh->mu);
  pthread_cond_destroy(&sh->cv);
  free(sh->present), free(sh->head), free(sh->tail), free(sh);
}

static struct timespec abs_deadline(double seconds) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += (time_t)seconds;
  return t;
}

static ncclResult_t local_send(struct boot* base, int peer, int kind, int tag, const void* data,
                               size_t size) {
  struct boot_local* b = (struct boot_local*)base;
  struct local_shared* sh = b->sh;
  struct local_msg* m = malloc(sizeof(*m) + size);
  if (m == NULL) {
    WARN("out of host memory buffering a %zu-byte bootstrap message", size);
    return ncclSystemError;
  }
  m->next = NULL, m->src = base->rank, m->kind = kind, m->tag = tag, m->size = size;
  if (size > 0) memcpy(m->data, data, size);
  pthread_mutex_lock(&sh->mu);
  if (b->aborted) {
    pthread_mutex_unlock(&sh->mu);
    free(m);
    return ncclRemoteError;
  }
  if (sh->tail[peer] != NULL)
    sh->tail[peer]->next = m;
  else
    sh->head[peer] = m;
  sh->tail[peer] = m;
  pthread_cond_broadcast(&sh->cv);
  pthread_mutex_unlock(&sh->mu);
  return ncclSuccess;
}

/* Unlink and return the first message from (src, kind, tag) in rank's mailbox, or NULL. */
static struct local_msg* take(struct local_shared* sh, int rank, int src, int kind, int tag) {
  struct local_msg* prev = NULL;
  for (struct local_msg* m = sh->head[rank]; m != NULL; prev = m, m = m->next) {
    if (m->src != src || m->kind != kind || m->tag != tag) continue;
    if (prev != NULL)
      prev->next = m->next;
    else
      sh->head[rank] = m->next;
    if (sh->tail[rank] == m) sh->tail[rank] = prev;
    return m;
  }
  return NULL;
}

static ncclResult_t local_recv(struct boot* base, int peer, int kind, int tag, void* data,
                               size_t size) {
  struct boot_local* b = (struct boot_local*)base;
  struct local_shared* sh = b->sh;
  struct local_msg* m = NULL;
  pthread_mutex_lock(&sh->mu);
  while ((m = take(sh, base->rank, peer, kind, tag)) == NULL && !b->aborted)
    pthread_cond_wait(&sh->cv, &sh->mu);
  pthread_mutex_unlock(&sh->mu);
  if (m == NULL) {
    INFO(LOG_BOOTSTRAP, "bootstrap rank %d: receive from rank %d aborted", base->rank, peer);
    return ncclRemoteError;
  }
  return boot_msg_deliver(base, peer, tag, m, m->data, m->size, data, size);
}

static void local_abort(struct boot* base) {
  struct boot_local* b = (struct boot_local*)base;
  pthread_mutex_lock(&b->sh->mu);
  b->aborted = 1;
  pthread_cond_broadcast(&b->sh->cv);
  pthread_mutex_unlock(&b->sh->mu);
}

static void local_free(struct boot* base) {
  struct boot_local* b = (struct boot_local*)base;
  shared_release(b->sh);
  free(b);
}

static const struct boot_ops local_ops = {
    .send = local_send, .recv = local_recv, .abort = local_abort, .free = local_free};

/* Names the ranks that never joined, e.g. "3 5". */
static void missing_list(const struct local_shared* sh, char* buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int r = 0; r < sh->nranks && used + 12 < len; r++)
    if (!sh->present[r])
      used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? " " : "", r);
}

ncclResult_t boot_local_init(const struct boot_id* id, int rank, int nranks, struct boot** out) {
  struct local_shared* sh = id->shared;
  struct boot_local* b = NULL;
  ncclResult_t res = ncclSuccess;
  int64_t timeout = param_int(PARAM_BOOT_TIMEOUT);
  if (nranks != id->nranks) {
    WARN("bootstrap: rank %d called init with nranks %d but the in-process id was made for %d",
         rank, nranks, id->nranks);
    return ncclInvalidArgument;
  }
  NCCLCALLOC(b, 1);
  b->base.ops = &local_ops, b->base.rank = rank, b->base.nranks = nranks, b->sh = sh;
  memcpy(b->base.key, id->key, sizeof b->base.key);
  struct timespec dl = abs_deadline((double)timeout);
  pthread_mutex_lock(&sh->mu);
  if (sh->present[rank]) {
    pthread_mutex_unlock(&sh->mu);
    WARN("bootstrap: rank %d joined the in-process job twice; give each thread its own rank", rank);
    free(b);
    return ncclInvalidUsage;
  }
  sh->present[rank] = 1;
  sh->joined++;
  pthread_cond_broadcast(&sh->cv);
  int rc = 0;
  while (sh->joined < sh->nranks && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&sh->cv, &sh->mu, &dl);
  if (sh->joined < sh->nranks) {
    char miss[512];
    missing_list(sh, miss, sizeof(miss));
    pthread_mutex_unlock(&sh->mu);
    WARN("bootstrap rendezvous timed out after %lld s: rank(s) %s of %d never arrived; start every "
         "rank or raise MONEL_BOOT_TIMEOUT",
         (long long)timeout, miss, nranks);
    res = ncclSystemError;
    goto out;
  }
  pthread_mutex_unlock(&sh->mu);
  INFO(LOG_BOOTSTRAP, "bootstrap rank %d of %d joined the in-process job", rank, nranks);
  *out = &b->base;
  b = NULL;
out:
  if (b != NULL) local_free(&b->base);
  return res;
}

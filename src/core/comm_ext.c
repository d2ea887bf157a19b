/* SPDX-License-Identifier: BSD-3-Clause */
/* Windows, one-sided signal counts, grow and suspend of a communicator (core/comm_ext.h). */
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "boot/tags.h"
#include "os/shm.h"
#include "topo/host.h"
#include "core/comm_ext.h"
#include "core/watch.h"
#include "util/check.h"

/* ---- windows ---- */

/* Every window of the process: the device-pointer helpers get a window without its comm. */
static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;
static struct comm_window* windows;

ncclResult_t comm_window_add(struct ncclComm* comm, void* buff, size_t size, int flags,
                             struct ncclWindow_vidmem** out) {
  struct comm_window* cw = calloc(1, sizeof *cw);
  struct ncclWindow_vidmem* w = calloc(1, sizeof *w);
  if (cw == NULL || w == NULL) {
    free(cw);
    free(w);
    WARN("ncclCommWindowRegister: out of host memory on rank %d", comm->rank);
    return ncclSystemError;
  }
  w->winHost = cw;
  w->lsaFlatBase = buff;
  w->lsaRank = comm->rank;
  w->worldRank = comm->rank;
  pthread_mutex_lock(&comm->lock);
  int id = comm->window_seq++;
  pthread_mutex_unlock(&comm->lock);
  pthread_mutex_lock(&win_lock);
  *cw = (struct comm_window){windows, comm, w, buff, size, flags, id, NULL, NULL, 0};
  windows = cw;
  pthread_mutex_unlock(&win_lock);
  *out = w;
  return ncclSuccess;
}

/* Unmaps what the window mapped of its peers and frees its record. */
static void window_free(struct comm_window* cw) {
  for (int i = 0; i < cw->nmaps; i++) {
    struct window_map* m = &cw->maps[i];
    if (m->len == 0)
      cw->comm->engine->win_unmap(cw->comm, m->base);
    else
      os_shm_unmap(m->base, m->len);
  }
  free(cw->maps);
  free(cw->peers);
  free(cw->handle);
  free(cw);
}

static struct comm_window* find(struct ncclComm* comm, const struct ncclWindow_vidmem* w, int id) {
  struct comm_window* found = NULL;
  pthread_mutex_lock(&win_lock);
  for (struct comm_window* c = windows; c && !found; c = c->next)
    if ((comm == NULL || c->comm == comm) && (w ? c->handle == w : c->id == id)) found = c;
  pthread_mutex_unlock(&win_lock);
  return found;
}

struct comm_window* comm_window_of(struct ncclComm* comm, const struct ncclWindow_vidmem* w) {
  return w ? find(comm, w, -1) : NULL;
}

struct comm_window* comm_window_by_id(struct ncclComm* comm, int id) {
  return find(comm, NULL, id);
}

ncclResult_t comm_window_remove(struct ncclComm* comm, struct ncclWindow_vidmem* w) {
  struct comm_window* found = NULL;
  pthread_mutex_lock(&win_lock);
  for (struct comm_window** pc = &windows; *pc && w; pc = &(*pc)->next) {
    if ((*pc)->handle == w && (*pc)->comm == comm) {
      found = *pc;
      *pc = found->next;
      break;
    }
  }
  pthread_mutex_unlock(&win_lock);
  if (found == NULL) {
    WARN("ncclCommWindowDeregister: window %p was not registered on comm %p", (void*)w,
         (void*)comm);
    return ncclInvalidArgument;
  }
  window_free(found);
  return ncclSuccess;
}

void comm_window_rec(struct ncclComm* comm, const void* buff, size_t size, struct window_rec* out) {
  memset(out, 0, sizeof *out);
  out->addr = (uint64_t)(uintptr_t)buff;
  out->size = size;
  out->shared = size > 0 && mem_shared_find(buff, size, &out->shm);
  if (size > 0 && comm->engine->win_export) comm->engine->win_export(comm, buff, size, out);
}

/* Where this rank reaches peer p's part described by r; NULL: it cannot. */
static char* map_peer(struct comm_window* cw, int p, const struct window_rec* r) {
  struct ncclComm* comm = cw->comm;
  const struct peer_info *me = &comm->peers[comm->rank], *pi = &comm->peers[p];
  if (pi->host_hash != me->host_hash || r->size == 0) return NULL;
  if (r->device) { /* the engine's memory: the engine maps it */
    void* map = NULL;
    char* at = comm->engine->win_import ? comm->engine->win_import(comm, p, r, &map) : NULL;
    if (map != NULL) cw->maps[cw->nmaps++] = (struct window_map){map, 0};
    return at;
  }
  if (pi->pid == me->pid) return (char*)(uintptr_t)r->addr; /* a thread of this process */
  if (!r->shared) return NULL;                              /* another process's private memory */
  void* base = NULL;
  if (os_shm_open(r->shm.name, r->shm.len, &base) != ncclSuccess) return NULL;
  cw->maps[cw->nmaps++] = (struct window_map){base, r->shm.len};
  return (char*)base + r->shm.offset;
}

ncclResult_t comm_window_map_peers(struct comm_window* cw, const struct window_rec* recs) {
  int n = cw->comm->nranks;
  cw->peers = calloc((size_t)n, sizeof *cw->peers);
  cw->maps = calloc((size_t)n, sizeof *cw->maps);
  if (cw->peers == NULL || cw->maps == NULL) {
    WARN("ncclCommWindowRegister: out of host memory on rank %d", cw->comm->rank);
    return ncclSystemError;
  }
  for (int p = 0; p < n; p++) {
    if (p == cw->comm->rank) continue;
    cw->peers[p].ptr = map_peer(cw, p, &recs[p]);
    cw->peers[p].size = cw->peers[p].ptr ? (size_t)recs[p].size : 0;
  }
  return ncclSuccess;
}

ncclResult_t comm_window_share(struct comm_window* cw) {
  struct ncclComm* comm = cw->comm;
  struct window_rec* recs = calloc((size_t)comm->nranks, sizeof *recs);
  if (recs == NULL) {
    WARN("ncclCommWindowRegister: out of host memory on rank %d", comm->rank);
    return ncclSystemError;
  }
  comm_window_rec(comm, cw->buff, cw->size, &recs[comm->rank]);
  ncclResult_t res = boot_allgather(comm->boot, recs, sizeof *recs);
  if (res == ncclSuccess) res = comm_window_map_peers(cw, recs);
  free(recs);
  return res;
}

void* comm_window_peer_ptr(const struct comm_window* cw, int peer, size_t offset) {
  if (peer == cw->comm->rank) return offset < cw->size ? (char*)cw->buff + offset : NULL;
  if (cw->peers == NULL || cw->peers[peer].ptr == NULL || offset >= cw->peers[peer].size)
    return NULL;
  return cw->peers[peer].ptr + offset;
}

/* ---- one-sided signals ---- */

struct signal_count {
  int peer, sig, ctx, n;
};
struct onesided {
  struct signal_count* v;
  int len, cap;
  struct kept {
    void* p;
    cudaStream_t stream;
    comm_release_fn release;
  } * kept;
  int nkept, capkept;
};

static struct onesided* onesided_of(struct ncclComm* comm) {
  if (comm->onesided == NULL) comm->onesided = calloc(1, sizeof *comm->onesided);
  return comm->onesided;
}

ncclResult_t comm_onesided_keep(struct ncclComm* comm, void* p, cudaStream_t stream,
                                comm_release_fn release) {
  pthread_mutex_lock(&comm->lock);
  struct onesided* o = onesided_of(comm);
  if (o && o->nkept == o->capkept) {
    int cap = o->capkept ? 2 * o->capkept : 16;
    struct kept* v = realloc(o->kept, (size_t)cap * sizeof *v);
    if (v) o->kept = v, o->capkept = cap;
  }
  int ok = o && o->nkept < o->capkept;
  if (ok) o->kept[o->nkept++] = (struct kept){p, stream, release};
  pthread_mutex_unlock(&comm->lock);
  if (ok) return ncclSuccess;
  WARN("ncclPutSignal: out of host memory on rank %d", comm->rank);
  return ncclSystemError;
}

void comm_onesided_release(struct ncclComm* comm) {
  struct kept* k = NULL;
  int n = 0;
  pthread_mutex_lock(&comm->lock);
  struct onesided* o = comm->onesided;
  if (o && o->nkept) {
    k = o->kept, n = o->nkept;
    o->kept = NULL, o->nkept = o->capkept = 0;
  }
  pthread_mutex_unlock(&comm->lock);
  for (int i = 0; i < n; i++) k[i].release(k[i].p, k[i].stream);
  free(k);
}

ncclResult_t comm_signal_add(struct ncclComm* comm, int peer, int sig, int ctx, int n) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  struct onesided* o = onesided_of(comm);
  if (o == NULL) goto oom;
  for (int i = 0; i < o->len; i++) {
    struct signal_count* c = &o->v[i];
    if (c->peer == peer && c->sig == sig && c->ctx == ctx) {
      c->n += n;
      goto out;
    }
  }
  if (o->len == o->cap) {
    int cap = o->cap ? 2 * o->cap : 16;
    struct signal_count* v = realloc(o->v, (size_t)cap * sizeof *v);
    if (v == NULL) goto oom;
    o->v = v, o->cap = cap;
  }
  o->v[o->len++] = (struct signal_count){peer, sig, ctx, n};
  goto out;
oom:
  WARN("ncclWaitSignal: out of host memory counting signals on rank %d", comm->rank);
  res = ncclSystemError;
out:
  pthread_mutex_unlock(&comm->lock);
  return res;
}

int comm_signal_take(struct ncclComm* comm, int peer, int sig, int ctx, int want) {
  int took = 0;
  pthread_mutex_lock(&comm->lock);
  struct onesided* o = comm->onesided;
  for (int i = 0; o && i < o->len; i++) {
    struct signal_count* c = &o->v[i];
    if (c->peer == peer && c->sig == sig && c->ctx == ctx) {
      took = c->n < want ? c->n : want;
      c->n -= took;
      break;
    }
  }
  pthread_mutex_unlock(&comm->lock);
  return took;
}

void comm_ext_free(struct ncclComm* comm) {
  pthread_mutex_lock(&win_lock);
  for (struct comm_window** pc = &windows; *pc;) {
    struct comm_window* c = *pc;
    if (c->comm != comm) {
      pc = &c->next;
      continue;
    }
    *pc = c->next;
    window_free(c);
  }
  pthread_mutex_unlock(&win_lock);
  comm_onesided_release(comm);
  if (comm->onesided) free(comm->onesided->v), free(comm->onesided->kept);
  free(comm->onesided);
  comm->onesided = NULL;
}

/* ---- grow ---- */

ncclResult_t comm_grow_id(struct ncclComm* comm, ncclUniqueId* id) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (comm->grow_id_pending) {
    WARN("ncclCommGetUniqueId: comm %p rank %d already holds a grow token that no ncclCommGrow "
         "used yet; grow with it first",
         (void*)comm, comm->rank);
    res = ncclInvalidUsage;
  } else if ((res = boot_id_create(&comm->grow_id)) == ncclSuccess) {
    comm->grow_id_pending = 1;
    *id = comm->grow_id;
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

struct grow_offer {
  int has_id;
  int valid; /* the root's token is its comm's unused one */
  int nranks;
  ncclUniqueId id;
};

ncclResult_t comm_grow(struct ncclComm* parent, int nranks, const ncclUniqueId* id,
                       struct ncclComm** out, const ncclConfig_t* config) {
  ncclResult_t res = ncclSuccess;
  struct grow_offer* all = calloc((size_t)parent->nranks, sizeof *all);
  if (all == NULL) {
    WARN("ncclCommGrow: out of host memory on rank %d", parent->rank);
    return ncclSystemError;
  }
  struct grow_offer* me = &all[parent->rank];
  me->nranks = nranks;
  if (id) {
    me->has_id = 1, me->id = *id;
    pthread_mutex_lock(&parent->lock);
    me->valid = parent->grow_id_pending && memcmp(&parent->grow_id, id, sizeof *id) == 0;
    if (me->valid) parent->grow_id_pending = 0; /* consumed */
    pthread_mutex_unlock(&parent->lock);
  }
  NCCLCHECKGOTO(boot_allgather(parent->boot, all, sizeof *all), res, out);
  int root = -1, roots = 0;
  for (int r = 0; r < parent->nranks; r++) {
    if (all[r].nranks != nranks) {
      WARN("ncclCommGrow: rank %d asks for %d ranks, rank %d for %d; every rank of the comm must "
           "pass the same nRanks",
           parent->rank, nranks, r, all[r].nranks);
      res = ncclInvalidArgument;
      goto out;
    }
    if (all[r].has_id) root = root < 0 ? r : root, roots++;
  }
  if (roots != 1) {
    WARN("ncclCommGrow: %d ranks of the comm passed a uniqueId; exactly one (the root, which made "
         "it with ncclCommGetUniqueId) must, the others pass NULL",
         roots);
    res = ncclInvalidUsage;
    goto out;
  }
  if (!all[root].valid) { /* every rank sees it and fails alike */
    WARN("ncclCommGrow: the uniqueId of root rank %d was not made by ncclCommGetUniqueId on this "
         "comm, or was already used; make a fresh one",
         root);
    res = ncclInvalidUsage;
    goto out;
  }
  res = comm_create(out, nranks, &all[root].id, parent->rank, config, parent->cuda_dev);
out:
  free(all);
  return res;
}

/* ---- suspend ---- */

ncclResult_t comm_suspend(struct ncclComm* comm, int flags) {
  if (comm->suspended) {
    WARN("ncclCommSuspend: comm %p rank %d is already suspended; call ncclCommResume first",
         (void*)comm, comm->rank);
    return ncclInvalidUsage;
  }
  if (!(flags & NCCL_SUSPEND_MEM)) return ncclSuccess; /* nothing else can be suspended */
  /* No rank frees what peers share before every rank stopped using it. */
  NCCLCHECK(boot_barrier(comm->boot));
  watch_stop(comm);
  if (comm->engine->comm_free) comm->engine->comm_free(comm);
  comm->engine_state = NULL;
  comm->engine_dev_bytes = 0;
  comm->suspended = 1;
  INFO(LOG_INIT, "comm %p rank %d suspended: engine memory released", (void*)comm, comm->rank);
  return ncclSuccess;
}

ncclResult_t comm_resume(struct ncclComm* comm) {
  if (!comm->suspended) return ncclSuccess; /* resuming a comm that holds everything */
  NCCLCHECK(comm->engine->comm_init(comm));
  NCCLCHECK(watch_start(comm));
  /* No rank uses the comm before every rank rebuilt its side. */
  NCCLCHECK(boot_barrier(comm->boot));
  comm->suspended = 0;
  INFO(LOG_INIT, "comm %p rank %d resumed, device memory %.1f MB", (void*)comm, comm->rank,
       comm->engine_dev_bytes / 1048576.0);
  return ncclSuccess;
}

ncclResult_t comm_onesided_send(struct ncclComm* comm, int peer, const void* data, size_t size) {
  return boot_send(comm->boot, peer, BOOT_TAG_ONESIDED, data, size);
}

ncclResult_t comm_onesided_recv(struct ncclComm* comm, int peer, void* data, size_t size) {
  return boot_recv(comm->boot, peer, BOOT_TAG_ONESIDED, data, size);
}

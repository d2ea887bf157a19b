/* SPDX-License-Identifier: BSD-3-Clause */
/* The ranks of a comm in one process (threads driving GPUs, or several ranks on one GPU) reach
 * each other's buffers by plain device pointers: a peer's kernel writes into my FIFOs and step
 * counters. When one of them is destroyed or aborted, its own kernels are over (engine.c drain),
 * but a sibling's may still be in a step that writes into its memory: freeing that memory then
 * faults the sibling's kernel, and the fault is sticky for the whole process. So the buffers of
 * such ranks are handed to a group shared by the process's ranks of the comm, and freed when the
 * last of them has drained its own kernels and left. Ranks of other processes map the buffers
 * through shared memory, which stays until its last mapping goes, or through CUDA IPC, which does
 * not: freeing an exported block before its importers closed it is undefined (CUDA's
 * cudaIpcOpenMemHandle). After a healthy finalize (a barrier) no kernel of theirs runs; after an
 * abort one may, until its own abort stops it (docs/FAILURES.md). */
#include <pthread.h>
#include <stdlib.h>
#include "boot/boot.h"
#include "util/check.h"
#include "gpu/gpu.h"

struct held {
  struct gpu_comm* g;
  int dev, over;
};

struct gpu_siblings {
  pthread_mutex_t lock;
  int left; /* ranks of the process that have not left yet */
  int nheld;
  struct held* held; /* n entries: the buffers of those that left */
};

int gpu_same_process(const struct ncclComm* comm, int a, int b) {
  const struct peer_info *p = &comm->peers[a], *q = &comm->peers[b];
  return p->host_hash == q->host_hash && p->pid == q->pid;
}

/* Whether any process holds two ranks of the comm (the same answer on every rank). */
static int any_siblings(const struct ncclComm* comm) {
  for (int a = 0; a < comm->nranks; a++)
    for (int b = a + 1; b < comm->nranks; b++)
      if (gpu_same_process(comm, a, b)) return 1;
  return 0;
}

ncclResult_t gpu_siblings_join(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, me = comm->rank, here = 0, first = -1;
  for (int r = 0; r < n; r++)
    if (gpu_same_process(comm, me, r)) {
      here++;
      if (first < 0) first = r;
    }
  g->siblings = NULL;
  if (!any_siblings(comm)) return ncclSuccess; /* the allgather below is for all or none */
  struct gpu_siblings* mine = NULL;
  if (first == me && here > 1) { /* the process's lowest rank makes it before anyone sees it */
    NCCLCALLOC(mine, 1);
    NCCLCALLOC(mine->held, here);
    pthread_mutex_init(&mine->lock, NULL);
    mine->left = here;
  }
  void** all = NULL;
  ncclResult_t res = ncclSuccess;
  NCCLCALLOC(all, n);
  all[me] = mine;
  res = boot_allgather(comm->boot, all, sizeof *all);
  if (res == ncclSuccess && here > 1)
    g->siblings = all[first];
  else if (mine)
    free(mine->held), free(mine);
  free(all);
  return res;
}

int gpu_siblings_leave(struct gpu_comm* g, int dev, int over,
                       void (*release)(struct gpu_comm*, int dev, int over)) {
  struct gpu_siblings* s = g->siblings;
  if (s == NULL) return 0;
  pthread_mutex_lock(&s->lock);
  s->held[s->nheld++] = (struct held){g, dev, over};
  int last = --s->left == 0;
  pthread_mutex_unlock(&s->lock);
  if (!last) return 1;
  for (int i = 0; i < s->nheld; i++) release(s->held[i].g, s->held[i].dev, s->held[i].over);
  pthread_mutex_destroy(&s->lock);
  free(s->held);
  free(s);
  return 1;
}

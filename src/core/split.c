/* SPDX-License-Identifier: BSD-3-Clause */
/* ncclCommSplit and ncclCommShrink: derive a new comm from a parent. The new comm's leader (its
 * rank 0) makes a fresh bootstrap id of the parent's kind and sends it to the other members over
 * the parent's bootstrap; then every member initialises the new comm with it. */
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "boot/tags.h"
#include "util/check.h"
#include "core/comm.h"
#include "core/group.h"

struct member {
  int color, key, rank;
};

static int by_key(const void* a, const void* b) {
  const struct member *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* members[0..n) are the new comm's ranks in order (parent ranks); me is my index. */
static ncclResult_t join_new(struct ncclComm* parent, const int* members, int n, int me,
                             struct ncclComm** out, const ncclConfig_t* config) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (me == 0) {
    NCCLCHECK(parent->boot_local ? boot_id_create_local(&id, n) : boot_id_create_private(&id));
    for (int i = 1; i < n; i++)
      NCCLCHECK(boot_send(parent->boot, members[i], BOOT_TAG_SPLIT_ID, &id, sizeof id));
  } else {
    NCCLCHECK(boot_recv(parent->boot, members[0], BOOT_TAG_SPLIT_ID, &id, sizeof id));
  }
  ncclConfig_t cfg = parent->config;
  if (config == NULL) {
    cfg.commName = NULL;
    config = &cfg;
  }
  return comm_create(out, n, &id, me, config, parent->cuda_dev);
}

ncclResult_t comm_split(struct ncclComm* parent, int color, int key, struct ncclComm** out,
                        const ncclConfig_t* config) {
  ncclResult_t res = ncclSuccess;
  struct member* all = NULL;
  int* members = NULL;
  *out = NULL;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    WARN("ncclCommSplit: color %d is negative; use a color >= 0 or NCCL_SPLIT_NOCOLOR", color);
    return ncclInvalidArgument;
  }
  NCCLCALLOC(all, parent->nranks);
  all[parent->rank] = (struct member){color, key, parent->rank};
  NCCLCHECKGOTO(boot_allgather(parent->boot, all, sizeof *all), res, out);
  if (color == NCCL_SPLIT_NOCOLOR) goto out;
  int n = 0;
  for (int i = 0; i < parent->nranks; i++)
    if (all[i].color == color) all[n++] = all[i];
  qsort(all, n, sizeof *all, by_key);
  members = malloc(n * sizeof *members);
  if (!members) {
    res = ncclSystemError;
    goto out;
  }
  int me = -1;
  for (int i = 0; i < n; i++) {
    members[i] = all[i].rank;
    if (all[i].rank == parent->rank) me = i;
  }
  res = join_new(parent, members, n, me, out, config);
out:
  free(all);
  free(members);
  return res;
}

ncclResult_t comm_shrink(struct ncclComm* parent, const int* exclude, int nexclude,
                         struct ncclComm** out, const ncclConfig_t* config, int flags) {
  ncclResult_t res = ncclSuccess;
  char* gone = NULL;
  int* members = NULL;
  *out = NULL;
  NCCLCALLOC(gone, parent->nranks);
  for (int i = 0; i < nexclude; i++) {
    if (exclude[i] < 0 || exclude[i] >= parent->nranks) {
      WARN("ncclCommShrink: excluded rank %d is out of range [0, %d)", exclude[i], parent->nranks);
      res = ncclInvalidArgument;
      goto out;
    }
    gone[exclude[i]] = 1;
  }
  if (gone[parent->rank]) {
    WARN("ncclCommShrink: rank %d excludes itself; excluded ranks must not call ncclCommShrink",
         parent->rank);
    res = ncclInvalidArgument;
    goto out;
  }
  /* NCCL_SHRINK_ABORT asks to abandon the parent's pending work first; the CPU engine completes
   * every operation before returning, so there is none to abandon. */
  (void)flags;
  members = malloc(parent->nranks * sizeof *members);
  if (!members) {
    res = ncclSystemError;
    goto out;
  }
  int n = 0, me = -1;
  for (int i = 0; i < parent->nranks; i++)
    if (!gone[i]) {
      if (i == parent->rank) me = n;
      members[n++] = i;
    }
  res = join_new(parent, members, n, me, out, config);
out:
  free(gone);
  free(members);
  return res;
}

/* Inside a group a split waits for ncclGroupEnd, where the splits of all the comms one thread
 * drives run side by side. */
struct split_job {
  struct ncclComm* parent;
  int color, key;
  struct ncclComm** out;
  ncclConfig_t config;
  int has_config;
};

static ncclResult_t split_job_run(void* arg) {
  struct split_job* j = arg;
  ncclResult_t res =
      comm_split(j->parent, j->color, j->key, j->out, j->has_config ? &j->config : NULL);
  free(j);
  return res;
}

ncclResult_t comm_split_deferred(struct ncclComm* parent, int color, int key, struct ncclComm** out,
                                 const ncclConfig_t* config) {
  struct split_job* j = NULL;
  NCCLCALLOC(j, 1);
  *j = (struct split_job){parent, color, key, out, {0}, config != NULL};
  if (config) j->config = *config;
  *out = NULL;
  ncclResult_t res = group_add_job(split_job_run, j);
  if (res != ncclSuccess) free(j);
  return res;
}

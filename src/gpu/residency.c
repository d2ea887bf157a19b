/* SPDX-License-Identifier: BSD-3-Clause */
/* Thread blocks of a rank when ranks share a GPU. The kernels of a comm wait for each other
 * across ranks: a block spins on a FIFO until a block of a peer's kernel fills it, so every block
 * that a peer waits for must become resident while the waiting one holds its SM. A rank's own
 * launch counts on all of its blocks running at once (device/p2p.cu), and the ranks of a GPU
 * (threads of a process, or processes under MPS) have their kernels resident at the same time.
 * If the blocks of all of them exceed what the GPU holds at once, the resident ones can spin
 * forever on ones that never start: AlltoAll on many ranks launches a block per (peer,
 * direction, channel), n ranks of a GPU times 2(n-1) blocks or more.
 *
 * So each rank takes at most its share of the GPU: the SMs (one block of DEV_NTHREADS threads
 * fits an SM by the kernels' launch bounds; the point-to-point kernel takes an SM's registers)
 * over the ranks of the comm on that GPU, less the blocks of a next kernel that may begin while
 * the rank's last one ends (MONEL_LAUNCH_PDL: grids of at most that many blocks), at least 2 (a
 * sending and a receiving block). The bound is the same on every rank (the smallest share of
 * any GPU of the comm), as the plan's channels must agree across ranks. Other work on the GPU
 * (other comms, the application's kernels) is not counted: it can still fill the SMs.
 *
 * Rank-threads of one process on one GPU need their streams to run side by side as well. CUDA
 * puts a context's streams on CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 unless set, 32 at
 * most); two ranks' streams on one queue run in order, so one rank's kernel can wait behind
 * another's that spins for it. Each rank of the process has its caller's stream and ctl_stream,
 * and the application and the runtime have more: on one H200 two rank-threads a process ran with
 * 8 queues, three hung until given 32, eight ran with 16 (docs/FAILURES.md). So QUEUES_PER_RANK
 * queues a rank are asked for, on the safe side, and a process whose ranks on a GPU have fewer is
 * warned at init (a warning, not a refusal: fewer may do). */
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "util/check.h"
#include "util/param.h"
#include "gpu/gpu.h"

struct gpu_seat {
  uint64_t machine;
  char bus[32]; /* PCI bus id of the GPU */
  int sms;
  int pid;
};

#define QUEUES_PER_RANK 4
#define QUEUES_MOST     32 /* the most CUDA gives */

/* The warning for `threads` ranks of this process on one GPU (see the top of the file). */
static void check_queues(struct ncclComm* comm, int threads) {
  int have = (int)param_int(PARAM_CUDA_QUEUES);
  int want = threads * QUEUES_PER_RANK;
  if (threads < 2 || have >= want) return;
  if (want <= QUEUES_MOST)
    WARN("comm %p rank %d: %d ranks of this process share a GPU on %d hardware queues "
         "(CUDA_DEVICE_MAX_CONNECTIONS, 8 unless set): their streams can run one behind another "
         "and their kernels may wait forever on each other; set CUDA_DEVICE_MAX_CONNECTIONS=%d "
         "before CUDA starts",
         (void*)comm, comm->rank, threads, have, want);
  else
    WARN("comm %p rank %d: %d ranks of this process share a GPU, more than CUDA's %d hardware "
         "queues keep apart (%d a rank): their kernels may wait forever on each other; run at "
         "most %d rank-threads a GPU in a process, or the ranks as processes",
         (void*)comm, comm->rank, threads, QUEUES_MOST, QUEUES_PER_RANK,
         QUEUES_MOST / QUEUES_PER_RANK);
}

ncclResult_t gpu_bound_blocks(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, me = comm->rank, share = 0, most = 1, sms = 0, threads = 0;
  int64_t pdl = param_int(PARAM_LAUNCH_PDL);
  struct gpu_seat* all = NULL;
  ncclResult_t res = ncclSuccess;
  if (n < 2) return ncclSuccess;
  NCCLCALLOC(all, n);
  all[me].machine = comm->peers[me].machine_hash;
  all[me].pid = comm->peers[me].pid;
  if (cudaDeviceGetPCIBusId(all[me].bus, sizeof all[me].bus, comm->cuda_dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&all[me].sms, cudaDevAttrMultiProcessorCount, comm->cuda_dev) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    all[me].sms = 0; /* unknown: this rank bounds nothing */
  }
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, sizeof *all), res, out);
  int first = me; /* the process's lowest rank on this GPU warns for all of them */
  for (int q = 0; q < n && all[me].sms > 0; q++)
    if (all[q].machine == all[me].machine && all[q].pid == all[me].pid &&
        strcmp(all[q].bus, all[me].bus) == 0) {
      threads++;
      if (q < first) first = q;
    }
  if (first == me) check_queues(comm, threads);
  for (int r = 0; r < n; r++) {
    int here = 0;
    if (all[r].sms <= 0) continue;
    for (int q = 0; q < n; q++)
      here += all[q].machine == all[r].machine && strcmp(all[q].bus, all[r].bus) == 0;
    if (here > most) most = here;
    int mine = all[r].sms / here - (here > 1 && pdl > 0 ? (int)(pdl < 64 ? pdl : 64) : 0);
    if (share == 0 || mine < share) share = mine < 1 ? 1 : mine, sms = all[r].sms;
  }
  if (most < 2 && (share == 0 || g->cta.max <= share)) goto out; /* a GPU to itself: as asked */
  if (share < 2) {
    WARN("comm %p rank %d: %d ranks share a GPU of %d SMs: their kernels cannot all be resident "
         "at once and may wait forever on each other; run fewer ranks per GPU",
         (void*)comm, me, most, sms);
    share = 2;
  }
  if (g->cta.max > share) {
    INFO(LOG_INIT | LOG_TUNING,
         "comm %p rank %d: up to %d ranks share a GPU: at most %d thread blocks a kernel (was %d), "
         "so that every rank's blocks are resident at once",
         (void*)comm, me, most, share, g->cta.max);
    g->cta.max = share;
    if (g->cta.min > share) g->cta.min = share;
  }
out:
  free(all);
  return res;
}

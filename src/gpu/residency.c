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
 * (other comms, the application's kernels) is not counted: it can still fill the SMs. */
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
};

ncclResult_t gpu_bound_blocks(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, me = comm->rank, share = 0, most = 1, sms = 0;
  int64_t pdl = param_int(PARAM_LAUNCH_PDL);
  struct gpu_seat* all = NULL;
  ncclResult_t res = ncclSuccess;
  if (n < 2) return ncclSuccess;
  NCCLCALLOC(all, n);
  all[me].machine = comm->peers[me].machine_hash;
  if (cudaDeviceGetPCIBusId(all[me].bus, sizeof all[me].bus, comm->cuda_dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&all[me].sms, cudaDevAttrMultiProcessorCount, comm->cuda_dev) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    all[me].sms = 0; /* unknown: this rank bounds nothing */
  }
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, sizeof *all), res, out);
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

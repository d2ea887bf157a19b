/* SPDX-License-Identifier: BSD-3-Clause */
/* Windows in device memory (ncclGetPeerDevicePointer; the engine's win_* members, called by
 * core/comm_ext.c at registration): a peer's part as this rank can load and store it. A thread of
 * this process reaches it at its own address, on the same GPU or on one with peer access (enabled
 * here, as connect.c does for the FIFOs); another process of this host through CUDA IPC: the
 * handle of the allocation that holds the part and the part's offset in it, opened at
 * registration and closed at deregistration (gpu_ipc_open: one mapping an allocation a process).
 * Another host, another GPU without peer access (or NCCL_P2P_DISABLE=1), or memory CUDA IPC cannot
 * share (cuMem or pool allocations): NULL, as NCCL gives for a peer outside the load/store team.
 * Monel's ncclMemAlloc on a GPU is cudaMalloc, which CUDA IPC shares. */
#include <cuda.h>
#include <string.h>
#include "core/comm_ext.h"
#include "util/check.h"
#include "util/param.h"
#include "gpu/gpu.h"

/* What a rank tells its peers of its part beyond its address (window_rec.dev). */
struct win_dev {
  int dev;         /* its GPU, as its process numbers it */
  char bus[32];    /* ... and that GPU's PCI bus id, the same in every process */
  int ipc;         /* handle is set */
  uint64_t offset; /* of the part in the allocation the handle maps */
  cudaIpcMemHandle_t handle;
};
_Static_assert(sizeof(struct win_dev) <= sizeof(((struct window_rec*)0)->dev),
               "core/comm_ext.h: window_rec.dev holds struct win_dev");

typedef CUresult (*range_fn)(CUdeviceptr*, size_t*, CUdeviceptr);

/* Runs on comm's GPU, then gives the calling thread its device back. */
struct on_dev {
  int saved;
};
static int enter(const struct ncclComm* comm, struct on_dev* d) {
  if (cudaGetDevice(&d->saved) != cudaSuccess) d->saved = -1;
  if (d->saved == comm->cuda_dev) return 1;
  if (cudaSetDevice(comm->cuda_dev) == cudaSuccess) return 1;
  (void)cudaGetLastError();
  return 0;
}
static void leave(const struct ncclComm* comm, const struct on_dev* d) {
  if (d->saved >= 0 && d->saved != comm->cuda_dev) (void)cudaSetDevice(d->saved);
  (void)cudaGetLastError();
}

/* The IPC handle of the allocation holding [buff, buff+size), if it is one allocation CUDA IPC
 * can share. */
static void export_ipc(const void* buff, size_t size, struct win_dev* w) {
  range_fn range = (range_fn)gpu_driver_fn("cuMemGetAddressRange");
  CUdeviceptr base = 0, at = (CUdeviceptr)(uintptr_t)buff;
  size_t len = 0;
  if (range == NULL || range(&base, &len, at) != CUDA_SUCCESS || at + size > base + len) return;
  if (cudaIpcGetMemHandle(&w->handle, (void*)(uintptr_t)base) != cudaSuccess) return;
  w->ipc = 1;
  w->offset = (uint64_t)(at - base);
}

void gpu_win_export(struct ncclComm* comm, const void* buff, size_t size, struct window_rec* rec) {
  struct cudaPointerAttributes at;
  struct on_dev d;
  if (!enter(comm, &d)) return;
  if (cudaPointerGetAttributes(&at, buff) == cudaSuccess && at.type == cudaMemoryTypeDevice) {
    struct win_dev w;
    memset(&w, 0, sizeof w);
    w.dev = at.device;
    if (cudaDeviceGetPCIBusId(w.bus, sizeof w.bus, at.device) != cudaSuccess) w.bus[0] = '\0';
    export_ipc(buff, size, &w);
    memcpy(rec->dev, &w, sizeof w);
    rec->device = 1;
  }
  leave(comm, &d);
}

/* A thread of this process: its address, where this GPU reaches that one. */
static void* import_local(struct ncclComm* comm, const struct window_rec* rec,
                          const struct win_dev* w) {
  if (w->dev == comm->cuda_dev) return (void*)(uintptr_t)rec->addr;
  if (param_int(PARAM_P2P_DISABLE) == 1) return NULL;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, comm->cuda_dev, w->dev) != cudaSuccess || !can) return NULL;
  cudaError_t e = cudaDeviceEnablePeerAccess(w->dev, 0);
  if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return NULL;
  return (void*)(uintptr_t)rec->addr;
}

/* Another process of this host: its allocation opened here. */
static void* import_ipc(struct ncclComm* comm, int peer, const struct win_dev* w, void** map) {
  char bus[32] = "";
  if (!w->ipc) return NULL;
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, comm->cuda_dev) != cudaSuccess) return NULL;
  if (param_int(PARAM_P2P_DISABLE) == 1 && strcmp(bus, w->bus) != 0) return NULL;
  void* base = NULL;
  cudaError_t e = gpu_ipc_open(&w->handle, &base);
  if (e != cudaSuccess) {
    INFO(LOG_REG, "comm %p rank %d: rank %d's window cannot be opened through CUDA IPC: %s",
         (void*)comm, comm->rank, peer, cudaGetErrorString(e));
    return NULL;
  }
  *map = base;
  return (char*)base + w->offset;
}

void* gpu_win_import(struct ncclComm* comm, int peer, const struct window_rec* rec, void** map) {
  const struct peer_info *me = &comm->peers[comm->rank], *pi = &comm->peers[peer];
  struct win_dev w;
  struct on_dev d;
  void* at = NULL;
  *map = NULL;
  memcpy(&w, rec->dev, sizeof w);
  if (!enter(comm, &d)) return NULL;
  if (pi->pid == me->pid)
    at = import_local(comm, rec, &w);
  else
    at = import_ipc(comm, peer, &w, map);
  leave(comm, &d);
  return at;
}

void gpu_win_unmap(struct ncclComm* comm, void* map) {
  struct on_dev d;
  if (!enter(comm, &d)) return;
  gpu_ipc_close(map);
  leave(comm, &d);
}

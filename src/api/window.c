/* SPDX-License-Identifier: BSD-3-Clause */
/* Exported window calls: registration (core/comm_ext.c keeps the list), the user pointer, and
 * the host-side device-pointer helpers of NCCL's device API. A rank reaches the window of a peer
 * of its process (its address; on the GPU engine, on the same GPU or one with peer access) and of
 * a peer of another process of its host: on the CPU engine when the window lies in memory of
 * ncclMemAlloc (a shared segment), on the GPU engine in device memory CUDA IPC can share (mapped
 * at registration, unmapped at deregistration). */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "core/comm.h"
#include "core/comm_ext.h"
#include "core/group.h"
#include "util/check.h"

/* Registration is collective: every rank sends its record of the window (address, size, shared
 * segment, the engine's handle: core/comm_ext.h) to every peer and receives theirs, which maps
 * the peers' parts this rank can reach (ncclGetPeerDevicePointer). On the CPU engine the records
 * go over Send/Recv, which also opens the point-to-point paths to every peer both ways, because
 * a path is set up by both of its ends and a one-sided put must not wait for its target to set
 * up its end (api/onesided.c); the GPU engine's paths are open from init, and its records go
 * through the bootstrap (comm_window_share). Inside a group, or on a suspended comm, nothing is
 * exchanged: only the calling rank's part is known. */
static ncclResult_t exchange(ncclComm_t comm, struct comm_window* cw, const char* fn) {
  if (comm->nranks == 1 || group_depth() > 0 || comm->suspended) return ncclSuccess;
  if (comm->engine->enqueue_only) return comm_window_share(cw);
  struct window_rec* recs = calloc((size_t)comm->nranks + 1, sizeof *recs);
  if (recs == NULL) {
    WARN("%s: out of host memory on rank %d", fn, comm->rank);
    return ncclSystemError;
  }
  struct window_rec* mine = &recs[comm->nranks];
  comm_window_rec(comm, cw->buff, cw->size, mine);
  ncclResult_t res = pncclGroupStart(), end;
  for (int p = 0; p < comm->nranks && res == ncclSuccess; p++) {
    if (p == comm->rank) continue;
    res = pncclSend(mine, sizeof *mine, ncclUint8, p, comm, NULL);
    if (res == ncclSuccess) res = pncclRecv(&recs[p], sizeof *recs, ncclUint8, p, comm, NULL);
  }
  end = pncclGroupEnd();
  if (res == ncclSuccess) res = end;
  if (res == ncclSuccess) res = comm_window_map_peers(cw, recs);
  free(recs);
  return res;
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags) {
  const char* fn = "ncclCommWindowRegister";
  NCCLCHECK(comm_check(comm, fn, 0));
  NCCLCHECK(api_check_ptr(win, "win", fn));
  int known =
      NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING | NCCL_WIN_GIN_ONLY | NCCL_WIN_CFT_COUNTED;
  if (winFlags & ~known) {
    WARN("%s: winFlags 0x%x has unknown bits", fn, (unsigned)winFlags);
    return ncclInvalidArgument;
  }
  if (size > 0 && buff == NULL) {
    WARN("%s: buff is NULL for a window of %zu bytes", fn, size);
    return ncclInvalidArgument;
  }
  NCCLCHECK(comm_window_add(comm, buff, size, winFlags, win));
  ncclResult_t res = exchange(comm, comm_window_of(comm, *win), fn);
  if (res != ncclSuccess) {
    comm_window_remove(comm, *win);
    *win = NULL;
  }
  return res;
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  NCCLCHECK(comm_check(comm, "ncclCommWindowDeregister", 0));
  return comm_window_remove(comm, win);
}

/* The window record behind a handle, among every window of the process. */
static struct comm_window* window_of(ncclWindow_t win, const char* fn) {
  struct comm_window* cw = comm_window_of(NULL, win);
  if (cw == NULL) WARN("%s: window %p is not a registered window", fn, (void*)win);
  return cw;
}

NCCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  const char* fn = "ncclWinGetUserPtr";
  NCCLCHECK(comm_check(comm, fn, 0));
  NCCLCHECK(api_check_ptr(outUserPtr, "outUserPtr", fn));
  struct comm_window* cw = comm_window_of(comm, win);
  if (cw == NULL) {
    WARN("%s: window %p was not registered on comm %p", fn, (void*)win, (void*)comm);
    return ncclInvalidArgument;
  }
  *outUserPtr = cw->buff;
  return ncclSuccess;
}

/* The address of byte `offset` of rank `peer`'s part of the window, as this rank can use it:
 * NULL (and success) when this rank cannot reach that part, as NCCL gives for a peer outside
 * the load/store team. */
static ncclResult_t peer_pointer(ncclWindow_t window, size_t offset, int peer, void** out,
                                 const char* fn) {
  NCCLCHECK(api_check_ptr(out, "outPtr", fn));
  *out = NULL;
  struct comm_window* cw = window_of(window, fn);
  if (cw == NULL) return ncclInvalidArgument;
  struct ncclComm* comm = cw->comm;
  NCCLCHECK(api_check_rank(peer, comm->nranks, "peer", fn));
  if (offset >= cw->size) {
    WARN("%s: offset %zu is beyond the window's %zu bytes", fn, offset, cw->size);
    return ncclInvalidArgument;
  }
  *out = comm_window_peer_ptr(cw, peer, offset);
  if (*out == NULL)
    INFO(LOG_REG,
         "%s: rank %d cannot reach rank %d's part of window %p (another host, another GPU "
         "without peer access, another process's memory CUDA IPC cannot share or host memory "
         "not allocated by ncclMemAlloc, or registered inside a group): NULL",
         fn, comm->rank, peer, (void*)window);
  return ncclSuccess;
}

/* Monel's load/store team is the world (ncclTeamLsa), so lsa ranks are world ranks. */
NCCL_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank,
         void** outPtr) {
  return peer_pointer(window, offset, lsaRank, outPtr, "ncclGetLsaDevicePointer");
}

NCCL_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer,
         void** outPtr) {
  return peer_pointer(window, offset, peer, outPtr, "ncclGetPeerDevicePointer");
}

static ncclResult_t no_multimem(void** out, const char* fn) {
  if (out) *out = NULL;
  WARN("%s: multicast memory (NVLink SHARP multimem) is not available on Monel "
       "(ncclCommQueryProperties reports multimemSupport = false)",
       fn);
  return ncclInvalidUsage;
}

NCCL_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset,
         void** outPtr) {
  (void)window, (void)offset;
  return no_multimem(outPtr, "ncclGetLsaMultimemDevicePointer");
}

NCCL_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset,
         ncclMultimemHandle_t multimem, void** outPtr) {
  (void)window, (void)offset, (void)multimem;
  return no_multimem(outPtr, "ncclGetMultimemDevicePointer");
}

/* CFT load/store entries belong to NCCL's device API, which Monel does not provide. */
static ncclResult_t no_cft(const char* fn) {
  WARN("%s: Monel has no CFT load/store entries (ncclCommQueryProperties reports cftSupport = "
       "false); use ncclGetPeerDevicePointer instead",
       fn);
  return ncclInvalidUsage;
}

NCCL_API(ncclResult_t, ncclGetMultimemDeviceLeInfo, ncclWindow_t window, size_t offset,
         ncclCftLeId* leId, size_t* leOffset) {
  (void)window, (void)offset, (void)leId, (void)leOffset;
  return no_cft("ncclGetMultimemDeviceLeInfo");
}

NCCL_API(ncclResult_t, ncclGetCftDeviceLeInfo, ncclWindow_t window, size_t offset, int peerCft,
         ncclTeam_t cftTeam, ncclCftLeId* leId, size_t* leOffset) {
  (void)window, (void)offset, (void)peerCft, (void)cftTeam, (void)leId, (void)leOffset;
  return no_cft("ncclGetCftDeviceLeInfo");
}

NCCL_API(ncclResult_t, ncclGetPeerDeviceLeInfo, ncclWindow_t window, size_t offset, int peerWorld,
         ncclCftLeId* leId, size_t* leOffset) {
  (void)window, (void)offset, (void)peerWorld, (void)leId, (void)leOffset;
  return no_cft("ncclGetPeerDeviceLeInfo");
}

/* Without CFT every team of this kind is the calling rank alone. */
NCCL_API(ncclTeam_t, ncclTeamCft, ncclComm_t comm, ncclCftTeamMode_t mode) {
  (void)comm, (void)mode;
  return (ncclTeam_t){1, 0, 1};
}

NCCL_API(ncclTeam_t, ncclTeamCftMultimem, ncclComm_t comm) {
  (void)comm;
  return (ncclTeam_t){1, 0, 1};
}

static ncclResult_t no_gin(const char* fn) {
  WARN("%s: Monel does not support NCCL's device API (ncclDevComm, GIN); use the host API "
       "collectives and ncclPutSignal",
       fn);
  return ncclInvalidUsage;
}

NCCL_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int size_log2,
         ncclGinOutboxHandle* outHandle, ncclDevResourceRequirements_t* outReq) {
  (void)nBlocks, (void)size_log2, (void)outHandle, (void)outReq;
  return no_gin("ncclGinOutboxCreateRequirement");
}

NCCL_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks,
         int size_log2, ncclGinInboxA2AHandle* outHandle, ncclDevResourceRequirements_t* outReq) {
  (void)peers, (void)nBlocks, (void)size_log2, (void)outHandle, (void)outReq;
  return no_gin("ncclGinInboxA2ACreateRequirement");
}

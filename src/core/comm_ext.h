/* SPDX-License-Identifier: BSD-3-Clause */
/* What NCCL 2.29-2.32 added to a communicator: growing it (ncclCommGetUniqueId, ncclCommGrow),
 * suspending it (ncclCommSuspend/Resume/MemStats), its windows as one-sided targets, and the
 * signals of one-sided operations. The api layer checks arguments; these do the work. */
#ifndef MONEL_CORE_COMM_EXT_H
#define MONEL_CORE_COMM_EXT_H
#include <stddef.h>
#include <stdint.h>
#include "core/comm.h"
#include "core/mem.h"

/* A registered window. Windows are registered collectively, in the same order on every rank, so
 * the n-th window of a comm is the same window on every rank: `id` names it to peers. */
struct comm_window {
  struct comm_window* next;
  struct ncclComm* comm;
  struct ncclWindow_vidmem* handle; /* what the user holds */
  void* buff;
  size_t size;
  int flags;
  int id;
  /* Where this rank reaches each rank's part of the window (nranks entries, NULL: not mapped;
   * NULL array: only its own part), and the segments it mapped for that (comm_window_map_peers). */
  struct window_peer {
    char* ptr;
    size_t size;
  } * peers;
  struct window_map {
    void* base;
    size_t len; /* 0: the engine's mapping (engine->win_unmap), else a shared segment's */
  } * maps;
  int nmaps;
};

/* What a rank tells every peer of its part of a window when it registers it. */
struct window_rec {
  uint64_t addr, size;
  int shared; /* shm is set: the part lies in a shared segment of ncclMemAlloc */
  struct mem_shared shm;
  int device;             /* the part is the engine's memory, described by dev (win_export) */
  unsigned char dev[128]; /* the engine's own record (gpu/window.c) */
};
/* This rank's record of [buff, buff+size) on comm (the engine adds its part: win_export). */
void comm_window_rec(struct ncclComm* comm, const void* buff, size_t size, struct window_rec* out);
/* Maps the peers' parts of cw from their records (recs[comm->nranks]; own entry ignored): a part
 * in the engine's memory as the engine maps it (win_import), else a peer of this process gives
 * its address, a peer of another process of this host its shared segment mapped here; other
 * peers stay unmapped. */
ncclResult_t comm_window_map_peers(struct comm_window* cw, const struct window_rec* recs);
/* The exchange of registration on an engine whose point-to-point paths need no opening (the
 * CUDA engine): every rank's record through the bootstrap, then comm_window_map_peers.
 * Collective over cw's comm. */
ncclResult_t comm_window_share(struct comm_window* cw);
/* Byte `offset` of rank peer's part of cw as this rank can use it; NULL when not mapped or
 * offset lies beyond that part. */
void* comm_window_peer_ptr(const struct comm_window* cw, int peer, size_t offset);

ncclResult_t comm_window_add(struct ncclComm* comm, void* buff, size_t size, int flags,
                             struct ncclWindow_vidmem** out);
/* Removes and frees w (ncclInvalidArgument when it is not a window of comm). */
ncclResult_t comm_window_remove(struct ncclComm* comm, struct ncclWindow_vidmem* w);
/* The window of comm (NULL: of any comm) behind a user handle / with an id; NULL when none. */
struct comm_window* comm_window_of(struct ncclComm* comm, const struct ncclWindow_vidmem* w);
struct comm_window* comm_window_by_id(struct ncclComm* comm, int id);

/* One-sided signals: counts of signals that arrived from (peer, sigIdx, ctx) and were not yet
 * consumed by a wait. */
ncclResult_t comm_signal_add(struct ncclComm* comm, int peer, int sig, int ctx, int n);
/* Takes up to `want` arrived signals of (peer, sig, ctx); returns how many it took. */
int comm_signal_take(struct ncclComm* comm, int peer, int sig, int ctx, int want);

/* Buffers a one-sided call queued inside a group must keep until the group ran: kept here and
 * given to their release function by comm_onesided_release (at the next call outside a group,
 * and when the comm is freed, after its engine). */
typedef void (*comm_release_fn)(void* p, cudaStream_t stream);
ncclResult_t comm_onesided_keep(struct ncclComm* comm, void* p, cudaStream_t stream,
                                comm_release_fn release);
void comm_onesided_release(struct ncclComm* comm);
/* One-sided messages between two ranks over the comm's bootstrap connections (the host route of
 * api/onesided.c): a send never waits for the receiver (the receiving rank buffers it); a
 * receive takes the next message from peer, which must be `size` bytes. */
ncclResult_t comm_onesided_send(struct ncclComm* comm, int peer, const void* data, size_t size);
ncclResult_t comm_onesided_recv(struct ncclComm* comm, int peer, void* data, size_t size);

/* ncclCommGetUniqueId: a token for the next grow of comm (one outstanding at a time). */
ncclResult_t comm_grow_id(struct ncclComm* comm, ncclUniqueId* id);
/* ncclCommGrow on a rank of parent: collective over parent's ranks, exactly one of which (the
 * root) passes the token of its comm_grow_id; the new comm has nranks ranks, parent's keep their
 * numbers and the ranks joining with ncclCommInitRankConfig(token) take the others. */
ncclResult_t comm_grow(struct ncclComm* parent, int nranks, const ncclUniqueId* id,
                       struct ncclComm** out, const ncclConfig_t* config);

/* ncclCommSuspend(NCCL_SUSPEND_MEM) / ncclCommResume: collective over comm's ranks. Suspend waits
 * for every rank, then frees the engine's state (buffers, connections, device memory); resume
 * rebuilds it and waits for every rank again. A suspended comm takes no operation. */
ncclResult_t comm_suspend(struct ncclComm* comm, int flags);
ncclResult_t comm_resume(struct ncclComm* comm);

#endif

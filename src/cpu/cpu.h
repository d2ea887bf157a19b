/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU engine's private state and its algorithm runners. */
#ifndef MONEL_CPU_CPU_H
#define MONEL_CPU_CPU_H
#include "core/algo.h"
#include "core/comm.h"
#include "cpu/fifo.h"
#include "transport/transport.h"

struct cpu_comm {
  size_t slot_size;
  int nslots;
  int ring_ready;
  struct conn *ring_send, *ring_recv; /* the point-to-point FIFOs to and from the ring neighbours */
  /* Point-to-point FIFOs, one per (peer, direction), created when an operation first needs them:
   * a group's Send/Recv, the ring, tree 0 (and tree 1 where it does not meet tree 0's links),
   * OneShot and TwoShot share them. Each operation ends with every slot it sent received on
   * both sides, so operations that run one after the other may share a FIFO, and a rank holds
   * at most two per peer for all of them. */
  struct conn *p2p_send, *p2p_recv;               /* nranks each */
  unsigned char *p2p_send_ready, *p2p_recv_ready; /* nranks each */
  struct cpu_tree* tree; /* tree.c's connections (cpu_tree_init, with the comm) */
  int oneshot_ready;     /* the point-to-point FIFOs to and from every peer exist */
  int net_dev;           /* the network device this rank's network connections use; -1 until */
                         /* the first one (core/node_topo.h) */
  int lost_rank;         /* a peer found gone, or named by a peer that stopped for it; -1 if none */
  struct conn_prof* prof_conns; /* FIFOs reporting proxy events for the running operation */
};

/* Bytes that one step of task t moves through a slot: the chunk size a tuner plugin's
 * getChunkSize gave the plan (t->plan.chunk_bytes), rounded down to a multiple of 64 so that it
 * holds whole elements of every type, where that is smaller than a slot; else a whole slot. Every
 * rank must get the same answer for one operation (NCCL relies on it too: a plugin answers from
 * the operation's shape); a rank whose steps differ from its peer's fails the operation with
 * ncclInvalidUsage (cpu_check_len), it never mixes the bytes. */
static inline size_t cpu_step_bytes(const struct cpu_comm* cc, const struct task* t) {
  size_t c = t->plan.chunk_bytes & ~(size_t)63;
  return c > 0 && c < cc->slot_size ? c : cc->slot_size;
}

/* caps.c: the engine's capability and cost table (core/plan.h). */
#define CPU_NCAPS 8
extern const struct plan_row cpu_caps[CPU_NCAPS];

/* A connection to set up with cpu_connect: I receive on it from peer (recv = 1: I create the
 * FIFO) or send on it to peer. Its descriptor goes on bootstrap tag `tag`, the acknowledgement
 * on tag + 1 (boot/tags.h). With ready != NULL a link whose *ready is set is skipped, and *ready
 * is set once it is connected; prefault touches its FIFO's pages then. */
struct cpu_link {
  struct conn* c;
  int peer, recv, tag;
  unsigned char* ready;
  int prefault;
};
/* Connect links in three phases that cannot deadlock (the bootstrap buffers sends); a phase only
 * waits for an earlier phase of a peer, which never waits:
 *   1. for every link I receive on: allocate the FIFO, send its descriptor to the peer;
 *   2. for every link I send on: receive its descriptor, map the FIFO, acknowledge;
 *   3. for every link I receive on: wait for the acknowledgement.
 * Both ends of a link call it at the same operation; each phase walks the links in order. */
ncclResult_t cpu_connect(struct ncclComm* comm, const struct cpu_link* links, int nlinks);
/* The bytes received from rank `from` must be what this rank expects (want), or the ranks were
 * given different counts or datatypes: ncclInvalidUsage and a WARN naming the operation. */
ncclResult_t cpu_check_len(const struct wait_ctx* w, size_t got, size_t want, int from);
/* Fill the transport, peer and peer pid of a conn to `peer`; fails if no transport reaches it. */
ncclResult_t cpu_conn_prepare(struct ncclComm* comm, int peer, struct conn* c);
ncclResult_t cpu_ring_allreduce(struct ncclComm* comm, const struct task* t);
/* Broadcast, Reduce. */
ncclResult_t cpu_ring_chain(struct ncclComm* comm, const struct task* t);
/* AllGather, ReduceScatter. */
ncclResult_t cpu_ring_gather_scatter(struct ncclComm* comm, const struct task* t);
/* AllReduce, Broadcast, Reduce on the double binary tree (algo/tree.h). */
ncclResult_t cpu_tree_run(struct ncclComm* comm, const struct task* t);
/* AllReduce of small buffers in one step (algo/oneshot.h), over the point-to-point FIFOs. */
ncclResult_t cpu_oneshot_allreduce(struct ncclComm* comm, const struct task* t);
/* Create those FIFOs now (collective: every rank calls it at the same operation). */
ncclResult_t cpu_oneshot_connect(struct ncclComm* comm);
/* AllReduce in two steps over the same FIFOs (algo/twoshot.h). */
ncclResult_t cpu_twoshot_allreduce(struct ncclComm* comm, const struct task* t);
/* One pass of a progress loop over the point-to-point FIFOs that moved `moved` things: reset the
 * idle state, or wait a little on `waiting` (the connection this side waits for, may be NULL)
 * and check every peer now and then (fails when one is gone or the comm was aborted). */
ncclResult_t cpu_mesh_idle(struct ncclComm* comm, const struct task* t, struct fifo_idle* idle,
                           int moved, struct conn* waiting);
/* Close the tree connections (peers waiting on them stop), and free them. */
ncclResult_t cpu_tree_init(struct ncclComm* comm);
void cpu_tree_close(struct ncclComm* comm, int lost_rank);
void cpu_tree_free(struct ncclComm* comm);
/* Send/Recv, AlltoAll(v), Gather, Scatter: all messages of the tasks progress together. */
ncclResult_t cpu_p2p_run(struct ncclComm* comm, struct task* const* tasks, int ntasks);

#endif

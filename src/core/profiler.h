/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's profiler plugins (ncclProfiler_v7..v1) fed by the group machinery (core/group.c). The
 * library is loaded by the first comm (NCCL_PROFILER_PLUGIN, libnccl-profiler.so, the net
 * plugin's library) and closed when the last comm using it is freed; each comm has a context
 * from init. Events emitted (docs/PLUGINS.md): GroupApi, CollApi, P2pApi (v5+), Group, Coll, P2p,
 * each started and stopped on the thread that runs the group, as the activation mask asks; the
 * CPU engine's network transfers as ProxyOp and ProxyStep (cpu/prof.c). */
#ifndef MONEL_CORE_PROFILER_H
#define MONEL_CORE_PROFILER_H
#include "core/comm.h"

struct profiler_comm; /* a comm's context and its group's open events (comm->prof) */

/* Loads the plugin if no comm holds it, then calls init for comm. A plugin that fails init is
 * dropped for this comm (INFO); the comm is created all the same, as in NCCL. */
void profiler_comm_init(struct ncclComm* comm);
void profiler_comm_free(struct ncclComm* comm);

/* An operation was enqueued (depth: the thread's group depth at the call, 0 outside a group):
 * the group's API event is started at its first operation, the operation's API event started
 * and stopped; the task keeps the mask snapshot and its API event (the parent of its event). */
void profiler_enqueue(struct ncclComm* comm, struct task* t, int depth);
/* The group's end began (before planning). */
void profiler_group_end_begins(struct ncclComm* comm);
/* Around the engine's run of the group's tasks: Group, then a Coll or P2p event per task;
 * after it they stop, then the group's API event. */
void profiler_run_begin(struct ncclComm* comm, struct task* tasks, int ntasks);
void profiler_run_end(struct ncclComm* comm, struct task* tasks, int ntasks);
/* The network side of an operation, for the engines: ProxyOp events (parent: the task's
 * Coll/P2p event) for each transfer with a peer across the network, ProxyStep events under them
 * per step. profiler_proxy_on: the task's mask asks for them and its Coll/P2p event has a
 * handle (a NULL handle from the plugin leaves its operation without children). A NULL op
 * handle, or a mask without ProxyStep, starts no step (NULL); states and stops of NULL
 * handles do nothing. transSize (bytes) reaches v4+ plugins; v1-v3 get zeroed arguments. */
int profiler_proxy_on(const struct ncclComm* comm, const struct task* t);
void* profiler_proxy_op_start(const struct ncclComm* comm, const struct task* t, int is_send,
                              int peer, int channel, int nsteps, size_t chunk);
void* profiler_proxy_step_start(const struct ncclComm* comm, const struct task* t, void* op,
                                int step);
void profiler_proxy_state(const struct ncclComm* comm, void* step, int state, size_t bytes);
void profiler_proxy_stop(const struct ncclComm* comm, void* h);
/* NetPlugin events: what an engine gives a step's isend/irecv as its profiler handle (net.h
 * phandle), which the net plugin hands back with the start of each event it reports under the
 * step: the step's event and the comm whose profiler context receives them. It stays valid and
 * unchanged while the network may use it (from before the slot is published until the step
 * stops). profiler_net_on: the task asks for NetPlugin events and the plugin's version has them
 * (v3+). The net plugin's callback (net_set_profiler) is set while a profiler is loaded: a
 * start with such a handle becomes a NetPlugin event under the step (the plugin's id and data),
 * an update state 21 with the plugin's data (v4+), a stop its stop; a start without a handle,
 * or one with a NULL step, gets a NULL event, whose updates and stops go nowhere. */
struct profiler_step_ref {
  const struct ncclComm* comm;
  void* step;
};
int profiler_net_on(const struct ncclComm* comm, const struct task* t);

/* Tasks dropped without a run (an error before it): the open API event is stopped. */
void profiler_group_drop(struct ncclComm* comm);

#endif

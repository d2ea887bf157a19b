/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's profiler plugins (ncclProfiler_v7..v1) fed by the group machinery (core/group.c). The
 * library is loaded by the first comm (NCCL_PROFILER_PLUGIN, libnccl-profiler.so, the net
 * plugin's library) and closed when the last comm using it is freed; each comm has a context
 * from init. Events emitted (docs/PLUGINS.md): GroupApi, CollApi, P2pApi (v5+), Group, Coll, P2p,
 * each started and stopped on the thread that runs the group, as the activation mask asks. */
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
/* Tasks dropped without a run (an error before it): the open API event is stopped. */
void profiler_group_drop(struct ncclComm* comm);

#endif

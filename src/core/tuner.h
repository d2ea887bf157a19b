/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's tuner plugins (ncclTunerPlugin_v7..v2) in the plan (docs/PLUGINS.md). The library is a
 * process singleton, found once (NCCL_TUNER_PLUGIN, libnccl-tuner.so, the net plugin's library);
 * each comm has its own context from init and finalizes it when it is freed. */
#ifndef MONEL_CORE_TUNER_H
#define MONEL_CORE_TUNER_H
#include "core/comm.h"
#include "core/tuner_abi.h"

struct tuner_comm; /* a comm's context (comm->tuner) */

/* Loads the plugin if this is the first comm, then calls its init for comm (the shape, and for
 * v5+ the cost constants filled from the engine's table; base latencies it changes are used by
 * the plan). An init error fails the comm's creation, as in NCCL. */
ncclResult_t tuner_comm_init(struct ncclComm* comm);
void tuner_comm_free(struct ncclComm* comm);

/* The plugin's name, or NULL when comm has no tuner. */
const char* tuner_name(const struct ncclComm* comm);

/* getCollInfo for one collective: bytes as NCCL counts them, pipe_ops the group's collectives
 * per channel, table NCCL's [algorithm][protocol] costs in microseconds (TUNER_IGNORE: cannot
 * run), *nchannels 0 unless the plugin sets it. A v2 plugin's pair is written into the table as
 * 0.0. Its error is returned (NCCL fails the call too); the WARN names the plugin. */
ncclResult_t tuner_coll_info(const struct ncclComm* comm, enum coll_kind coll, size_t bytes,
                             int pipe_ops, float table[TUNER_NALGO][TUNER_NPROTO], int* nchannels);

/* getChunkSize (v6+); *chunk is left as it is when the plugin has none. */
ncclResult_t tuner_chunk_size(const struct ncclComm* comm, enum coll_kind coll, size_t bytes,
                              int algo, int proto, int nchannels, size_t* chunk);

/* The base latency (us per step) the plugin set for (algo, proto) in the constants at init, or
 * a negative value when it kept Monel's. */
double tuner_base_latency(const struct ncclComm* comm, int algo, int proto);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* The plan's functions (types in core/plan.h). */
#ifndef MONEL_CORE_PLAN_CHOOSE_H
#define MONEL_CORE_PLAN_CHOOSE_H
#include "core/algo.h"
#include "core/comm.h"
#include "core/plan.h"

const char* proto_name(enum proto_id p);

/* Parse an NCCL_PROTO value (NCCL's names Simple, LL, LL128 and NCCL_ALGO's syntax: "^LL128",
 * "allreduce:LL,Simple;broadcast:Simple") into a mask of allowed protocols (bit 1 << PROTO_*)
 * per collective. ncclInvalidUsage and a sentence in err on error. */
ncclResult_t proto_parse(const char* s, unsigned allowed[COLL_COUNT], char* err, size_t errlen);

/* 1 when NCCL_PROTO (parsed once) allows protocol p for some collective (an engine loads its
 * kernels for the protocols it may be asked to run); 1 also when it does not parse. */
int proto_allowed_any(enum proto_id p);

/* The decision for one task, without the environment: the rows of an engine's table for the
 * comm's path, masks of allowed algorithms and protocols, and the engine's fit. Pure apart from
 * fit; unit-tested. On refusal returns ncclInvalidUsage and a sentence in err (no WARN). */
struct plan_in {
  const struct plan_row* rows;
  int nrows;
  const struct plan_comm* pc;
  int nranks;
  unsigned algos, protos; /* allowed (NCCL_ALGO, NCCL_PROTO for this collective) */
  const char* algo_env;   /* NCCL_ALGO's and NCCL_PROTO's values, for the sentences */
  const char* proto_env;
  const char* engine; /* the engine's name, for the sentences */
  struct plan_fit (*fit)(const struct ncclComm* comm, const struct task* t,
                         const struct plan_row* row);
  const struct ncclComm* comm; /* passed to fit and the tuner only */
  int tune;                    /* ask comm's tuner plugin (core/tuner.h); comm is then set */
  int pipe_ops;                /* the tuner's numPipeOps */
};
ncclResult_t plan_decide(const struct plan_in* in, const struct task* t, struct plan_op* out,
                         char* err, size_t errlen);

/* The plan of every task of a group on comm (t->plan), NCCL_ALGO and NCCL_PROTO applied:
 * ncclInvalidUsage with a WARN naming the task and the cause when one cannot run as they ask.
 * Logs the comm's table once (NCCL_DEBUG_SUBSYS=TUNING) and each new (collective, size class)'s
 * choice. */
ncclResult_t plan_tasks(struct ncclComm* comm, struct task* tasks, int ntasks);

/* Predicted microseconds of one task as the plan would run it (ncclGroupSimulateEnd); the
 * ring's model when it would be refused. */
double plan_estimate_us(struct ncclComm* comm, const struct task* t);

/* The algorithms comm's engine runs coll with on the comm's path (bit 1 << ALGO_*): the union of
 * its table's rows, the one list that the plan and the nccl*Config checks read; 0 for operations
 * without a choice of algorithm (point-to-point, AlltoAll, Gather, Scatter). */
unsigned plan_algos(const struct ncclComm* comm, enum coll_kind coll);

/* The comm's table (per collective, every row for its path: algorithm/protocol, latency and
 * bandwidth, allowed or not by NCCL_ALGO/NCCL_PROTO) at INFO TUNING. */
void plan_log_table(struct ncclComm* comm);

#endif

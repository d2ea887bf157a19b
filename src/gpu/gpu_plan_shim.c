/* TEMPORARY plan shim of the CUDA engine: until core fills a task's plan (core/plan.h) for every
 * collective, the engine derives the two fields it executes from the environment, so that each
 * (algorithm, protocol) pair can be forced and tested:
 *   algo: with NCCL_ALGO set, algo_choose (NCCL_ALGO intersected with what the collective has,
 *     cheapest by the cost model; a list that leaves nothing is refused there); without it
 *     ALGO_RING, and the engine keeps its own small-message paths (one-shot LL, one hop).
 *   proto: Simple if NCCL_PROTO allows it, else LL, else LL128 (gpu_comm.proto_*).
 * nchannels and chunk_bytes stay 0: the engine's own choice. */
#include "core/plan.h"
#include "gpu/gpu.h"
#include "util/check.h"
#include "util/param.h"

ncclResult_t gpu_plan_shim(struct ncclComm* comm, const struct gpu_comm* g, const struct task* t,
                           struct plan_op* plan, int* algo_forced) {
  plan->algo = ALGO_RING;
  plan->nchannels = 0;
  plan->chunk_bytes = 0;
  plan->est_us = 0;
  *algo_forced = param_str(PARAM_ALGO)[0] != '\0' && algo_available(t->coll) != 0;
  if (*algo_forced) NCCLCHECK(algo_choose(comm, t, &plan->algo));
  if (g->proto_simple) {
    plan->proto = PROTO_SIMPLE;
  } else if (g->proto_ll) {
    plan->proto = PROTO_LL;
  } else if (g->proto_ll128) {
    plan->proto = PROTO_LL128;
  } else {
    WARN("%s #%llu on rank %d: NCCL_PROTO=\"%s\" leaves no protocol: allow one of Simple, LL and "
         "LL128",
         coll_name(t->coll), (unsigned long long)t->seq, comm->rank, param_str(PARAM_PROTO));
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

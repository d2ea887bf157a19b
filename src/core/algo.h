/* Algorithm choice: which schedule runs a collective. NCCL_ALGO restricts the candidates with
 * NCCL's syntax (names case-insensitive):
 *   "Ring,Tree"                      allow these for every collective
 *   "^Tree"                          allow every algorithm but these
 *   "allreduce:tree;broadcast:ring"  per collective; collectives not named keep every algorithm
 *                                    (a segment without "coll:" sets that default instead)
 * Among the allowed algorithms that the collective has, the cost model (tune.c) picks the
 * cheapest for the task's size and rank count. NCCL's other names (CollnetDirect, CollnetChain,
 * NVLS, NVLSTree, PAT) are accepted in the list but Monel has none of them; Monel adds OneShot
 * and TwoShot (AllReduce only, CPU engine). A list that leaves a collective without an algorithm,
 * or an unknown name, is a usage error. */
#ifndef MONEL_CORE_ALGO_H
#define MONEL_CORE_ALGO_H
#include <stddef.h>
#include "core/comm.h"

enum algo_id {
  ALGO_TREE,
  ALGO_RING,
  ALGO_COLLNET_DIRECT,
  ALGO_COLLNET_CHAIN,
  ALGO_NVLS,
  ALGO_NVLS_TREE,
  ALGO_PAT,
  ALGO_ONESHOT, /* Monel's own (algo/oneshot.h): AllReduce of small buffers in one step */
  ALGO_TWOSHOT, /* Monel's own (algo/twoshot.h): AllReduce in two steps, pieces straight to peers */
  ALGO_COUNT
};

const char* algo_name(enum algo_id a);

/* The algorithms Monel can run a collective with (bit 1 << ALGO_*); 0 for operations NCCL_ALGO
 * does not apply to (point-to-point, AlltoAll, Gather, Scatter). */
unsigned algo_available(enum coll_kind coll);

/* Parse an NCCL_ALGO value into one mask of allowed algorithms per collective. On error returns
 * ncclInvalidUsage and writes a sentence into err. */
ncclResult_t algo_parse(const char* s, unsigned allowed[COLL_COUNT], char* err, size_t errlen);

/* 1 when NCCL_ALGO (parsed once) allows algorithm a for coll; 0 also when it does not parse. */
int algo_allowed(enum coll_kind coll, enum algo_id a);

/* The algorithm for task t on comm (a collective with algo_available != 0): NCCL_ALGO (parsed
 * once per process) intersected with what the collective has, cheapest by the cost model.
 * ncclInvalidUsage with a WARN naming the cause when nothing is left. */
ncclResult_t algo_choose(const struct ncclComm* comm, const struct task* t, enum algo_id* out);

#endif

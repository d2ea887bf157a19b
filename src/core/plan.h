/* The plan: for every operation of a group, one place in core decides the algorithm, the
 * protocol, the channels (thread blocks on the GPU) and the chunk size, from the engine's
 * capability and cost tables. NCCL_ALGO / NCCL_PROTO restrict the candidates or the operation is
 * refused (ncclInvalidUsage with a sentence); they are never silently replaced. Engines execute
 * a task's plan; they do not choose. */
#ifndef MONEL_CORE_PLAN_H
#define MONEL_CORE_PLAN_H
#include <stddef.h>
#include "core/algo.h"

/* NCCL's protocol numbering (NCCL_PROTO_LL = 0, LL128 = 1, SIMPLE = 2). */
enum proto_id { PROTO_LL, PROTO_LL128, PROTO_SIMPLE, PROTO_COUNT };

struct plan_op {
  enum algo_id algo;   /* ALGO_RING, ALGO_TREE, ALGO_ONESHOT, ALGO_TWOSHOT, ... */
  enum proto_id proto; /* how a slot is laid out, waited on and published */
  int nchannels;       /* channels (GPU: thread blocks per peer path); >= 1 */
  size_t chunk_bytes;  /* bytes one step of the schedule moves per channel; 0: the engine's own */
  double est_us;       /* the cost model's prediction for the chosen pair */
};

#endif

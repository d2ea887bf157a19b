/* Alpha-beta estimates per collective for a ring schedule:
 *   steps(n) * alpha + bytes_moved_per_rank(n) / bandwidth.
 * The CPU engine's figures are those of shared memory between processes; the CUDA engine's
 * those of NVLink. */
#include <string.h>
#include "core/tune.h"
#include "util/dtype.h"

struct figures {
  double alpha_us; /* per step */
  double gbps;     /* per rank, GB/s */
};

static struct figures engine_figures(const struct ncclComm* comm) {
  if (strcmp(comm->engine->name, "gpu") == 0) return (struct figures){1.0, 300.0};
  return (struct figures){2.0, 4.0};
}

double tune_estimate_us(const struct ncclComm* comm, const struct task* t) {
  struct figures f = engine_figures(comm);
  double n = comm->nranks, bytes = (double)t->count * dtype_size(t->dtype);
  double steps = 0, moved = 0;
  switch (t->coll) {
  case COLL_ALLREDUCE: steps = 2 * (n - 1), moved = 2 * (n - 1) / n * bytes; break;
  case COLL_REDUCESCATTER:
  case COLL_ALLGATHER: steps = n - 1, moved = (n - 1) * bytes; break;
  case COLL_BROADCAST:
  case COLL_REDUCE: steps = n - 1, moved = bytes; break;
  case COLL_ALLTOALL:
  case COLL_GATHER:
  case COLL_SCATTER: steps = n - 1, moved = (n - 1) * bytes; break;
  default: steps = 1, moved = bytes; break;
  }
  if (n == 1) steps = 0, moved = bytes;
  return steps * f.alpha_us + moved / (f.gbps * 1e3);
}

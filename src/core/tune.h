/* The cost model: predicted time of an operation from its size, the rank count and the engine's
 * latency/bandwidth figures (alpha-beta). Used by ncclGroupSimulateEnd and algorithm choice. */
#ifndef MONEL_CORE_TUNE_H
#define MONEL_CORE_TUNE_H
#include "core/algo.h"
#include "core/comm.h"
/* Predicted microseconds of task on comm with one algorithm (ring for algorithms the
 * collective does not have). */
double tune_algo_us(const struct ncclComm* comm, const struct task* task, enum algo_id algo);
/* Predicted microseconds with the cheapest algorithm the comm's engine has. */
double tune_estimate_us(const struct ncclComm* comm, const struct task* task);
#endif

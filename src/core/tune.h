/* The cost model: predicted time of an operation from its size, the rank count and the engine's
 * latency/bandwidth figures (alpha-beta). Used by ncclGroupSimulateEnd and algorithm choice. */
#ifndef MONEL_CORE_TUNE_H
#define MONEL_CORE_TUNE_H
#include "core/comm.h"
double tune_estimate_us(const struct ncclComm* comm, const struct task* task);
#endif

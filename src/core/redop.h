/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction operators: NCCL's built-in ops and the per-comm PreMulSum handles. */
#ifndef MONEL_CORE_REDOP_H
#define MONEL_CORE_REDOP_H
#include "core/comm.h"

/* Turn (op, dtype) of a call into the engine's red_op; rejects unknown ops, handles of another
 * comm and handles made for another dtype. */
ncclResult_t redop_resolve(struct ncclComm* comm, ncclRedOp_t op, ncclDataType_t dt,
                           struct red_op* out, const char* fn);
ncclResult_t redop_create_premulsum(struct ncclComm* comm, ncclRedOp_t* op, void* scalar,
                                    ncclDataType_t dt, ncclScalarResidence_t residence);
ncclResult_t redop_destroy(struct ncclComm* comm, ncclRedOp_t op);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* PreMulSum handles live in a small per-comm table: handle = ncclNumOps + slot. A host-immediate
 * scalar is copied at creation; a device-resident one is a pointer read when the op runs (the CPU
 * engine runs ops when they are queued or when their group ends, so it reads it then). */
#include <string.h>
#include "util/check.h"
#include "core/redop.h"
#include "util/dtype.h"

ncclResult_t redop_resolve(struct ncclComm* comm, ncclRedOp_t op, ncclDataType_t dt,
                           struct red_op* out, const char* fn) {
  memset(out, 0, sizeof *out);
  out->nranks = comm->nranks;
  switch ((int)op) {
  case ncclSum:
    out->kind = RED_SUM;
    return ncclSuccess;
  case ncclProd:
    out->kind = RED_PROD;
    return ncclSuccess;
  case ncclMax:
    out->kind = RED_MAX;
    return ncclSuccess;
  case ncclMin:
    out->kind = RED_MIN;
    return ncclSuccess;
  case ncclAvg:
    out->kind = RED_AVG;
    return ncclSuccess;
  default:
    break;
  }
  int slot = (int)op - ncclNumOps;
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (slot < 0 || slot >= COMM_MAX_REDOPS || !comm->redops[slot].used) {
    WARN("%s: reduction op %d is neither a built-in op nor a live ncclRedOpCreatePreMulSum handle "
         "of this comm",
         fn, (int)op);
    res = ncclInvalidArgument;
  } else if (comm->redops[slot].dtype != dt) {
    WARN("%s: reduction op %d was created for datatype %s but the call uses %s", fn, (int)op,
         dtype_name(comm->redops[slot].dtype), dtype_name(dt));
    res = ncclInvalidArgument;
  } else {
    *out = comm->redops[slot].op;
    out->nranks = comm->nranks;
    if (comm->redops[slot].device_scalar && comm->engine->enqueue_only)
      out->device_scalar = comm->redops[slot].device_scalar; /* read by the kernel */
    else if (comm->redops[slot].device_scalar)
      memcpy(out->scalar, comm->redops[slot].device_scalar, dtype_size(dt));
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

ncclResult_t redop_create_premulsum(struct ncclComm* comm, ncclRedOp_t* op, void* scalar,
                                    ncclDataType_t dt, ncclScalarResidence_t residence) {
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    WARN("ncclRedOpCreatePreMulSum: residence %d is neither ncclScalarDevice nor "
         "ncclScalarHostImmediate",
         (int)residence);
    return ncclInvalidArgument;
  }
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  int slot = 0;
  while (slot < COMM_MAX_REDOPS && comm->redops[slot].used) slot++;
  if (slot == COMM_MAX_REDOPS) {
    WARN("ncclRedOpCreatePreMulSum: this comm already holds %d live ops; destroy unused ones with "
         "ncclRedOpDestroy",
         COMM_MAX_REDOPS);
    res = ncclInvalidUsage;
  } else {
    struct redop_slot* s = &comm->redops[slot];
    memset(s, 0, sizeof *s);
    s->used = 1;
    s->dtype = dt;
    s->op.kind = RED_PREMULSUM;
    s->op.nranks = comm->nranks;
    if (residence == ncclScalarHostImmediate)
      memcpy(s->op.scalar, scalar, dtype_size(dt));
    else
      s->device_scalar = scalar;
    *op = (ncclRedOp_t)(ncclNumOps + slot);
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

ncclResult_t redop_destroy(struct ncclComm* comm, ncclRedOp_t op) {
  int slot = (int)op - ncclNumOps;
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if ((int)op < ncclNumOps) {
    WARN("ncclRedOpDestroy: op %d is a built-in op; only ncclRedOpCreatePreMulSum handles can be "
         "destroyed",
         (int)op);
    res = ncclInvalidArgument;
  } else if (slot >= COMM_MAX_REDOPS || !comm->redops[slot].used) {
    WARN("ncclRedOpDestroy: op %d is not a live handle of this comm", (int)op);
    res = ncclInvalidArgument;
  } else {
    comm->redops[slot].used = 0;
  }
  pthread_mutex_unlock(&comm->lock);
  return res;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Launches of the ring and tree kernels (colls.cuh): the instantiation of the launch's protocol
 * and data type (generated files, one per pair; CMakeLists.txt). */
#include "device/colls.cuh"

#define SWITCH_T(dtype, CALL)                                                                      \
  switch (dtype) {                                                                                 \
  case ncclInt8:                                                                                   \
    CALL(int8_t)                                                                                   \
  case ncclUint8:                                                                                  \
    CALL(uint8_t)                                                                                  \
  case ncclInt32:                                                                                  \
    CALL(int32_t)                                                                                  \
  case ncclUint32:                                                                                 \
    CALL(uint32_t)                                                                                 \
  case ncclInt64:                                                                                  \
    CALL(int64_t)                                                                                  \
  case ncclUint64:                                                                                 \
    CALL(uint64_t)                                                                                 \
  case ncclFloat16:                                                                                \
    CALL(dev_f16)                                                                                  \
  case ncclFloat32:                                                                                \
    CALL(float)                                                                                    \
  case ncclFloat64:                                                                                \
    CALL(double)                                                                                   \
  case ncclBfloat16:                                                                               \
    CALL(dev_bf16)                                                                                 \
  case ncclFloat8e4m3:                                                                             \
    CALL(dev_e4m3)                                                                                 \
  case ncclFloat8e5m2:                                                                             \
    CALL(dev_e5m2)                                                                                 \
  default:                                                                                         \
    return cudaErrorInvalidValue;                                                                  \
  }

template <int PROTO>
static cudaError_t ring_launch(const struct dev_ring_args* a, cudaStream_t s,
                               const struct dev_launch_ex* ex) {
#define CALL(T) return colls_ring_launch<PROTO, T>(a, s, ex);
  SWITCH_T(a->dtype, CALL)
#undef CALL
}
template <int PROTO> static cudaError_t ring_preload(int dtype, int op) {
#define CALL(T) return colls_ring_preload<PROTO, T>(op);
  SWITCH_T(dtype, CALL)
#undef CALL
}
template <int PROTO>
static cudaError_t tree_launch(const struct dev_tree_args* a, cudaStream_t s,
                               const struct dev_launch_ex* ex) {
#define CALL(T) return colls_tree_launch<PROTO, T>(a, s, ex);
  SWITCH_T(a->dtype, CALL)
#undef CALL
}
template <int PROTO> static cudaError_t tree_preload(int dtype, int op) {
#define CALL(T) return colls_tree_preload<PROTO, T>(op);
  SWITCH_T(dtype, CALL)
#undef CALL
}

extern "C" cudaError_t dev_ring_launch(const struct dev_ring_args* a, cudaStream_t stream,
                                       const struct dev_launch_ex* ex) {
  switch (a->proto) {
  case DEV_PROTO_LL:
    return ring_launch<DEV_PROTO_LL>(a, stream, ex);
  case DEV_PROTO_LL128:
    return ring_launch<DEV_PROTO_LL128>(a, stream, ex);
  default:
    return ring_launch<DEV_PROTO_SIMPLE>(a, stream, ex);
  }
}

/* Load the kernel of (proto, dtype, op) now (dev_preload_fn). */
extern "C" cudaError_t dev_ring_preload(int proto, int dtype, int op) {
  switch (proto) {
  case DEV_PROTO_LL:
    return ring_preload<DEV_PROTO_LL>(dtype, op);
  case DEV_PROTO_LL128:
    return ring_preload<DEV_PROTO_LL128>(dtype, op);
  default:
    return ring_preload<DEV_PROTO_SIMPLE>(dtype, op);
  }
}

extern "C" cudaError_t dev_tree_launch(const struct dev_tree_args* a, cudaStream_t stream,
                                       const struct dev_launch_ex* ex) {
  switch (a->proto) {
  case DEV_PROTO_LL:
    return tree_launch<DEV_PROTO_LL>(a, stream, ex);
  case DEV_PROTO_LL128:
    return tree_launch<DEV_PROTO_LL128>(a, stream, ex);
  default:
    return tree_launch<DEV_PROTO_SIMPLE>(a, stream, ex);
  }
}

extern "C" cudaError_t dev_tree_preload(int proto, int dtype, int op) {
  switch (proto) {
  case DEV_PROTO_LL:
    return tree_preload<DEV_PROTO_LL>(dtype, op);
  case DEV_PROTO_LL128:
    return tree_preload<DEV_PROTO_LL128>(dtype, op);
  default:
    return tree_preload<DEV_PROTO_SIMPLE>(dtype, op);
  }
}

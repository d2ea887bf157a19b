/* The CUDA engine, host side: per-comm state and the CUDA error check. */
#ifndef MONEL_GPU_GPU_H
#define MONEL_GPU_GPU_H
#include <cuda_runtime_api.h>
#include "core/comm.h"
#include "device/dev.h"

/* A failing CUDA runtime call: WARN with its name and CUDA's message, return ncclUnhandledCudaError. */
#define CUDACHECK(call)                                                                            \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      WARN("%s failed: %s (CUDA error %d)", #call, cudaGetErrorString(e_), (int)e_);               \
      return ncclUnhandledCudaError;                                                               \
    }                                                                                              \
  } while (0)

struct gpu_comm {
  int nchannels_max;  /* channels with FIFOs */
  int nslots;
  size_t slot_bytes;
  size_t fifo_bytes;  /* one channel's FIFO: header + slots */
  char* fifo;         /* my FIFOs (receive side), nchannels_max x fifo_bytes, on my GPU */
  char* next_fifo;    /* the next rank's FIFOs as I address them */
  int next_ipc;       /* next_fifo was opened with cudaIpcOpenMemHandle */
  uint64_t* steps;    /* device: 2 counters per channel */
};

#endif

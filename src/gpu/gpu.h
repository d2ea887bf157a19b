/* The CUDA engine, host side: per-comm state and the CUDA error check. */
#ifndef MONEL_GPU_GPU_H
#define MONEL_GPU_GPU_H
#include <cuda_runtime_api.h>
#include "core/comm.h"
#include "device/dev.h"

/* A failing CUDA runtime call: WARN with its name and CUDA's message, return
 * ncclUnhandledCudaError. */
#define CUDACHECK(call)                                                                            \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      WARN("%s failed: %s (CUDA error %d)", #call, cudaGetErrorString(e_), (int)e_);               \
      return ncclUnhandledCudaError;                                                               \
    }                                                                                              \
  } while (0)

struct gpu_comm {
  int nchannels_max; /* channels with FIFOs */
  int nslots;
  size_t slot_bytes;
  size_t fifo_bytes; /* one channel's FIFO: header + slots */
  char* fifo;        /* my FIFOs (receive side), nchannels_max x fifo_bytes, on my GPU */
  char* next_fifo;   /* the next rank's FIFOs as I address them */
  int next_ipc;      /* next_fifo was opened with cudaIpcOpenMemHandle */
  uint64_t* steps;   /* device: 2 counters per channel */
  /* One-shot LL AllReduce (dev.h): usable when every rank mapped every peer's buffer. */
  int ll_ok;
  int proto_ll, proto_simple;   /* allowed by NCCL_PROTO */
  char* ll;                     /* my LL buffer, on my GPU */
  uint32_t* ll_seq;             /* device: launches so far, per block */
  char* peer_ll[DEV_MAX_PEERS]; /* every rank's LL buffer as I address it */
  unsigned peer_ll_ipc;         /* bit r: peer_ll[r] was opened with cudaIpcOpenMemHandle */
  /* Point-to-point (gpu/p2p.c, device/p2p.cu): usable when every rank mapped every peer's FIFOs. */
  int p2p_ok;
  int p2p_nch;    /* channels per peer */
  int p2p_nslots; /* FIFO slots per (peer, channel) */
  size_t p2p_slot_bytes;
  char* p2p_fifo;                /* my FIFOs, [source rank][channel], on my GPU */
  uint64_t* p2p_steps;           /* device: 2 counters per (peer, channel) */
  char* peer_p2p[DEV_MAX_PEERS]; /* every rank's FIFOs as I address them */
  unsigned peer_p2p_ipc;
  struct gmsg* msgs; /* host scratch: the messages of a batch */
  int msg_cap;
  cudaEvent_t join_ev;          /* joins the streams of a batch */
  struct dev_p2p_args p2p_args; /* host scratch: one launch's arguments */
  size_t dev_bytes;             /* device memory this comm allocated */
};

/* connect.c: the ring FIFOs (fails with a reason when the next GPU cannot be reached) and the
 * one-shot buffers (never fails for lack of peer access: ll_ok says whether they can be used). */
ncclResult_t gpu_connect_ring(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_connect_ll(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_connect_p2p(struct ncclComm* comm, struct gpu_comm* g);
void gpu_disconnect(struct gpu_comm* g);

/* p2p.c: run the messages of Send/Recv/AlltoAll(v)/Gather/Scatter tasks together. */
int gpu_p2p_channels(int nchannels_max);
ncclResult_t gpu_p2p_run(struct ncclComm* comm, struct task* const* tasks, int ntasks);

#endif

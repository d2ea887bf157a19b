/* What the host side of the CUDA engine (gpu/) hands to the kernels (device/): plain C structs
 * passed by value as kernel arguments, so a launch needs no allocation and no copy and can be
 * captured in a CUDA graph. Compiles as C11 and as CUDA.
 *
 * A connection is one FIFO owned by the receiving rank, on its GPU, per channel:
 *   [tail u64][pad][head u64][pad] [slot 0][slot 1]...[slot nslots-1]
 *   tail: steps the sender has posted (written by the sender, remotely; read by the receiver)
 *   head: steps the receiver has released (written by the receiver; read by the sender, remotely)
 * Every remote access to a FIFO happens before the step its owner waits for, so once a rank's
 * kernels are done no peer touches its memory any more (its comm can be freed without a barrier).
 * Step counters live in device memory of the comm and carry over from one launch to the next. */
#ifndef MONEL_DEVICE_DEV_H
#define MONEL_DEVICE_DEV_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#define DEV_MAX_CHANNELS 32
#define DEV_NTHREADS 512
#define DEV_FIFO_HEADER 256 /* bytes before slot 0: tail at 0, head at 128 */
#define DEV_FIFO_TAIL 0
#define DEV_FIFO_HEAD 128

struct dev_channel {
  char* send_fifo; /* the next rank's FIFO (peer memory): slots and tail written, head read */
  char* recv_fifo; /* my FIFO: slots and tail read, head written */
};

struct dev_allreduce_args {
  const void* in;
  void* out;
  size_t count;
  int rank, nranks;
  int nchannels, nslots;
  size_t slot_bytes;
  int dtype;                  /* ncclDataType_t */
  int op;                     /* RED_* of cpu/reduce.h */
  unsigned char scalar[8];    /* PREMULSUM factor in the data type (host scalar) */
  const void* device_scalar;  /* PREMULSUM factor read by the kernel, or NULL */
  uint64_t* steps;            /* 2 per channel: steps sent, steps received */
  struct dev_channel ch[DEV_MAX_CHANNELS];
};

#ifdef __cplusplus
extern "C" {
#endif
/* Launch the ring AllReduce: one block of DEV_NTHREADS threads per channel on `stream`. */
cudaError_t dev_allreduce_launch(const struct dev_allreduce_args* args, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_rt.h - the few CUDA runtime calls the benches use, loaded at run time.
 *
 * No link-time CUDA dependency: bench_cuda_load() dlopens libcudart and
 * returns the number of usable GPUs (0 without a runtime, a driver or GPUs, or
 * when MONEL_ENGINE=cpu). With 0 GPUs the benches use host memory, a NULL
 * stream and wall-clock timing.
 */
#ifndef MONEL_BENCH_CUDA_RT_H
#define MONEL_BENCH_CUDA_RT_H

#include <stddef.h>

#include "nccl.h"

int bench_cuda_load(void);
int bench_cuda_active(void);
int bench_cuda_set_device(int dev);
int bench_cuda_stream_create(cudaStream_t* s);
void bench_cuda_stream_destroy(cudaStream_t s);
int bench_cuda_stream_sync(cudaStream_t s);
/* Copies between any two buffers on stream s of the current GPU and waits for it (memcpy
 * without GPUs). */
int bench_copy(void* dst, const void* src, size_t bytes, cudaStream_t s);
/* "NVIDIA H200 [0000:19:00.0]" or "CPU" into out. */
void bench_device_desc(int dev, char* out, size_t len);
/* CUDA graphs (-G): capture on s, then launch n times. */
int bench_graph_begin(cudaStream_t s);
int bench_graph_end(cudaStream_t s, void** exec);
int bench_graph_launch(void* exec, cudaStream_t s);
void bench_graph_destroy(void* exec);

#endif

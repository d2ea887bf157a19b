/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_rt.c - run-time loading of the CUDA runtime for the benches.
 */
#define _GNU_SOURCE
#include "cuda_rt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*fn_int_t)(int);
typedef int (*fn_intp_t)(int*);
typedef int (*fn_stream_create_t)(cudaStream_t*, unsigned);
typedef int (*fn_stream_t)(cudaStream_t);
typedef int (*fn_memcpy_t)(void*, const void*, size_t, int, cudaStream_t);
typedef int (*fn_busid_t)(char*, int, int);
typedef int (*fn_props_t)(void*, int);
typedef int (*fn_begin_t)(cudaStream_t, int);
typedef int (*fn_end_t)(cudaStream_t, void**);
typedef int (*fn_inst_t)(void**, void*, unsigned long long);
typedef int (*fn_glaunch_t)(void*, cudaStream_t);
typedef int (*fn_gdestroy_t)(void*);

static struct {
  int ngpus;
  fn_int_t set_device;
  fn_intp_t get_count;
  fn_stream_create_t stream_create;
  fn_stream_t stream_destroy;
  fn_stream_t stream_sync;
  fn_memcpy_t memcpy_fn;
  fn_busid_t bus_id;
  fn_props_t props;
  fn_begin_t begin_capture;
  fn_end_t end_capture;
  fn_inst_t instantiate;
  fn_glaunch_t graph_launch;
  fn_gdestroy_t graph_destroy;
  fn_gdestroy_t exec_destroy;
} rt;

enum { memcpy_default = 4, capture_mode_relaxed = 2 };

int bench_cuda_load(void) {
  const char* engine = getenv("MONEL_ENGINE");
  if (engine && strcmp(engine, "cpu") == 0) return 0;
  static const char* const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  void* h = NULL;
  for (size_t i = 0; i < 3 && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  rt.set_device = (fn_int_t)dlsym(h, "cudaSetDevice");
  rt.get_count = (fn_intp_t)dlsym(h, "cudaGetDeviceCount");
  rt.stream_create = (fn_stream_create_t)dlsym(h, "cudaStreamCreateWithFlags");
  rt.stream_destroy = (fn_stream_t)dlsym(h, "cudaStreamDestroy");
  rt.stream_sync = (fn_stream_t)dlsym(h, "cudaStreamSynchronize");
  rt.memcpy_fn = (fn_memcpy_t)dlsym(h, "cudaMemcpyAsync");
  rt.bus_id = (fn_busid_t)dlsym(h, "cudaDeviceGetPCIBusId");
  rt.props = (fn_props_t)dlsym(h, "cudaGetDeviceProperties_v2");
  if (!rt.props) rt.props = (fn_props_t)dlsym(h, "cudaGetDeviceProperties");
  rt.begin_capture = (fn_begin_t)dlsym(h, "cudaStreamBeginCapture");
  rt.end_capture = (fn_end_t)dlsym(h, "cudaStreamEndCapture");
  rt.instantiate = (fn_inst_t)dlsym(h, "cudaGraphInstantiateWithFlags");
  rt.graph_launch = (fn_glaunch_t)dlsym(h, "cudaGraphLaunch");
  rt.graph_destroy = (fn_gdestroy_t)dlsym(h, "cudaGraphDestroy");
  rt.exec_destroy = (fn_gdestroy_t)dlsym(h, "cudaGraphExecDestroy");
  int n = 0;
  if (!rt.set_device || !rt.get_count || !rt.stream_create || !rt.stream_sync || !rt.memcpy_fn ||
      rt.get_count(&n) != 0 || n <= 0)
    return 0;
  rt.ngpus = n;
  return n;
}

int bench_cuda_active(void) {
  return rt.ngpus > 0;
}

int bench_cuda_set_device(int dev) {
  return rt.ngpus ? rt.set_device(dev % rt.ngpus) : 0;
}

/* Non-blocking, as nccl-tests makes them: the legacy default stream (cudaMemcpy of the data
 * checks) does not wait for them, so a rank's copy never waits for another rank's collective
 * (ranks that share a GPU would deadlock). */
int bench_cuda_stream_create(cudaStream_t* s) {
  *s = NULL;
  return rt.ngpus ? rt.stream_create(s, 0x01 /* cudaStreamNonBlocking */) : 0;
}

void bench_cuda_stream_destroy(cudaStream_t s) {
  if (rt.ngpus && s && rt.stream_destroy) rt.stream_destroy(s);
}

int bench_cuda_stream_sync(cudaStream_t s) {
  return rt.ngpus ? rt.stream_sync(s) : 0;
}

/* On the rank's stream, then waited for: a cudaMemcpy from pageable memory goes on the legacy
 * stream, which non-blocking streams do not wait for, and may return before the data is on the
 * GPU, so a collective enqueued right after it could read the buffer before the copy lands. */
int bench_copy(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes == 0) return 0;
  if (rt.ngpus) {
    int err = rt.memcpy_fn(dst, src, bytes, memcpy_default, s);
    return err ? err : rt.stream_sync(s);
  }
  memmove(dst, src, bytes);
  return 0;
}

void bench_device_desc(int dev, char* out, size_t len) {
  if (!rt.ngpus) {
    snprintf(out, len, "cpu [host memory] CPU engine");
    return;
  }
  char bus[32] = "?";
  static char props[16384]; /* cudaDeviceProp starts with char name[256] */
  const char* name = "GPU";
  if (rt.bus_id) rt.bus_id(bus, (int)sizeof(bus), dev % rt.ngpus);
  if (rt.props && rt.props(props, dev % rt.ngpus) == 0) name = props;
  snprintf(out, len, "%2d [%s] %.200s", dev % rt.ngpus, bus, name);
}

int bench_graph_begin(cudaStream_t s) {
  if (!rt.ngpus || !rt.begin_capture) return -1;
  return rt.begin_capture(s, capture_mode_relaxed);
}

int bench_graph_end(cudaStream_t s, void** exec) {
  void* graph = NULL;
  *exec = NULL;
  if (!rt.end_capture || !rt.instantiate) return -1;
  int err = rt.end_capture(s, &graph);
  if (err) return err;
  err = rt.instantiate(exec, graph, 0);
  if (rt.graph_destroy) rt.graph_destroy(graph);
  return err;
}

int bench_graph_launch(void* exec, cudaStream_t s) {
  return rt.graph_launch ? rt.graph_launch(exec, s) : -1;
}

void bench_graph_destroy(void* exec) {
  if (exec && rt.exec_destroy) rt.exec_destroy(exec);
}

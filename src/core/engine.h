/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine interface: what runs a comm's operations. The CPU engine (cpu/) moves host memory
 * with host threads; the CUDA engine (gpu/) launches kernels on the user's stream. core/ picks
 * one per comm at init and never looks inside. */
#ifndef MONEL_CORE_ENGINE_H
#define MONEL_CORE_ENGINE_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "core/plan.h"

struct ncclComm;
struct task;
struct window_rec;

struct engine {
  const char* name;
  /* 1 if run() only enqueues work and returns without waiting for peers (the CUDA engine): a
   * group then runs its comms one after the other on the calling thread, unless run_waits says
   * that one will wait this time. */
  int enqueue_only;
  /* An enqueue-only engine's exception, asked after the tasks are planned: whether run() of these
   * tasks will wait for peers (the CUDA engine's first use of a connection, which both ranks set
   * up together); a group then runs its comms side by side, one thread each, as for an engine
   * that waits, so that comms of one process that must meet do. NULL: never. */
  int (*run_waits)(const struct ncclComm* comm, const struct task* tasks, int ntasks);
  /* Set up the comm's engine state after bootstrap (peers known). */
  ncclResult_t (*comm_init)(struct ncclComm* comm);
  /* Run the tasks a group collected for this comm, in order. The CPU engine completes them
   * before returning; the CUDA engine enqueues them on their streams. */
  ncclResult_t (*run)(struct ncclComm* comm, struct task* tasks, int ntasks);
  /* Make blocked operations of this comm return promptly (may be called from any thread). */
  void (*abort)(struct ncclComm* comm);
  /* Checks a task's buffers and stream before it is queued (ncclInvalidArgument and a sentence
   * naming fn for a buffer or stream the engine cannot use); NULL: nothing to check. */
  ncclResult_t (*check_task)(struct ncclComm* comm, const struct task* t, const char* fn);
  /* Operations handed to the device and finished (sequence numbers), read by the watch thread
   * (core/watch.c) of an engine whose run() returns before the work is done; NULL otherwise.
   * fresh = 0: a view that may be a little behind, at no wait (the periodic look); 1: as of now
   * (waits for the device's counters: for the operation named when a peer dies or a hang is
   * reported). */
  void (*progress)(struct ncclComm* comm, int fresh, uint64_t* issued, uint64_t* done);
  /* Its capability and cost table (core/plan.h): every (algorithm, protocol) pair it runs, per
   * collective and path, with latency and bandwidth figures and where they were measured. The
   * plan (core/plan.c) picks only among these rows. */
  const struct plan_row* caps;
  int ncaps;
  /* Whether this comm can run a row for task t now, and a measured crossover (struct plan_fit);
   * NULL: every row runs at every size. comm_init fills comm->plan (the path, the limits). */
  struct plan_fit (*plan_fit)(const struct ncclComm* comm, const struct task* t,
                              const struct plan_row* row);
  /* Release the engine state; accepts a comm whose comm_init failed or never ran. */
  void (*comm_free)(struct ncclComm* comm);
  /* The devices of an engine that has some (the CUDA engine; NULL for the CPU engine), asked
   * before any comm exists: how many the process may use (0: none, no driver), the calling
   * thread's current one (-1: none), and ncclMemAlloc/ncclMemFree of device memory (*handled
   * = 0: not the engine's memory, core takes host memory instead). */
  int (*device_count)(void);
  int (*current_device)(void);
  /* The device index of the GPU at a PCI bus id, or -1 (monel-info's topology lines). */
  int (*device_of_busid)(const char* busid);
  ncclResult_t (*mem_alloc)(void** ptr, size_t size, int* handled);
  ncclResult_t (*mem_free)(void* ptr, int* handled);
  /* One-sided calls (api/onesided.c) on an engine whose operations run later on a stream: a
   * wait for the stream; a copy in stream order. NULL (the CPU engine): operations complete
   * before run() returns. */
  ncclResult_t (*stream_wait)(cudaStream_t stream, const char* fn);
  ncclResult_t (*copy)(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                       const char* fn);
  /* Signals that need no receive (api/onesided.c): where signal_direct says so for a peer (the
   * same answer on both ranks of the pair), a signal of slot k (ENGINE_SIGNAL_SLOTS of them per
   * peer) is a stream write into the peer's memory, after every earlier operation of the
   * stream (a put's copy into the peer's window among them), and a wait a stream wait on this
   * rank's memory for `count` more of them: no kernel, no host wait, nothing the peer must
   * take. NULL: every signal travels as a message. */
  int (*signal_direct)(const struct ncclComm* comm, int peer);
  ncclResult_t (*signal_raise)(struct ncclComm* comm, int peer, int slot, cudaStream_t stream);
  ncclResult_t (*signal_wait)(struct ncclComm* comm, int peer, int slot, int count,
                              cudaStream_t stream);
  /* Collective setup some tasks need before run() (the CUDA engine sets up its copy-engine path
   * for the first call with a per-call NCCL_CTA_POLICY_ZERO): prepare_needed decides from the
   * tasks and what every rank of the comm holds alike, so every rank prepares at the same point
   * of its operations; core/group.c prepares the comms of one thread's group side by side.
   * NULL: nothing to prepare. */
  int (*prepare_needed)(const struct ncclComm* comm, const struct task* tasks, int ntasks);
  ncclResult_t (*prepare)(struct ncclComm* comm);
  /* Windows in the engine's memory (ncclGetPeerDevicePointer; core/comm_ext.c). win_export adds
   * to this rank's record of its part [buff, buff+size) what peers need to reach it (setting
   * rec->device), and leaves the record alone when the part is not the engine's memory.
   * win_import: a peer's part (rec->device set) as this rank can load and store it, or NULL;
   * *map (NULL: none) is what win_unmap closes when the window goes. NULL members: the engine's
   * windows lie in host memory. */
  void (*win_export)(struct ncclComm* comm, const void* buff, size_t size, struct window_rec* rec);
  void* (*win_import)(struct ncclComm* comm, int peer, const struct window_rec* rec, void** map);
  void (*win_unmap)(struct ncclComm* comm, void* map);
};

/* Direct signals per peer: sigIdx < ENGINE_SIGNAL_SIGS and ctx < ENGINE_SIGNAL_CTXS, slot
 * sigIdx * ENGINE_SIGNAL_CTXS + ctx; other indices travel as messages. */
#define ENGINE_SIGNAL_SIGS  64
#define ENGINE_SIGNAL_CTXS  8
#define ENGINE_SIGNAL_SLOTS (ENGINE_SIGNAL_SIGS * ENGINE_SIGNAL_CTXS)

extern const struct engine cpu_engine;
#ifdef MONEL_HAVE_CUDA
extern const struct engine gpu_engine;
#endif

/* core/engine.c: 0 when MONEL_ENGINE=cpu or the build has no CUDA engine (no comm or allocation
 * uses a GPU); the device a new rank uses by default (-1: none, the CPU engine); the GPUs a rank
 * of this process may use (for ncclCommInitAll without a device list). */
int engine_gpu_allowed(void);
int engine_default_device(void);
int engine_gpu_count(void);
/* The CUDA device at a PCI bus id, or -1 (none, or no CUDA engine). */
int engine_gpu_of_busid(const char* busid);

#endif

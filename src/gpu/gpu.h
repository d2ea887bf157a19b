/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA engine, host side: per-comm state and the CUDA error check. */
#ifndef MONEL_GPU_GPU_H
#define MONEL_GPU_GPU_H
#include <cuda_runtime_api.h>
#include "core/comm.h"
#include "core/plan.h"
#include "core/tune.h"
#include "device/dev.h"
#include "os/shm.h"
#include "proxy/fifo_net.h"

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

/* A buffer this rank shares with its peers: device memory, or pinned host memory that every GPU
 * of the comm maps (connect.c). */
struct gpu_mem {
  char* ptr; /* as my GPU addresses it */
  size_t len;
  int host;
  void* hptr;            /* host memory: its host address */
  void* map;             /* host memory shared across processes: the mapping of the segment */
  char shm[OS_SHM_NAME]; /* ... and its name, until every peer has mapped it */
  char* dslots; /* network FIFOs with GPUDirect RDMA (gpu/net.c): device memory laid out as this
                   block, of which only the slots are used (the counters stay here) */
};

/* A peer's buffer this rank mapped: closed by gpu_disconnect. */
enum { GPU_MAP_IPC, GPU_MAP_SHM };
struct gpu_peer_map {
  int kind;
  void* host;
  size_t len;
  char* dev;
};

struct ce_msg;

/* gpu_comm.p2p_flags[r]: peer r is across the network; its FIFOs are connected on every channel
 * (its entry of the peer table valid); of a network peer, channel 0 alone so far (the one hop's;
 * its entry valid): gpu/net.c. */
enum { GPU_PEER_NET = 1, GPU_PEER_LIVE = 2, GPU_PEER_FIRST = 4 };

struct gpu_siblings;

struct gpu_comm {
  int nranks; /* of the comm: the size of every per-peer array below */
  /* Thread blocks: the comm's limits (NCCL_MIN/MAX_CTAS, config) and the block model's figures
   * (core/tune.h). */
  struct tune_cta_limits cta;
  double link_gbps, block_gbps;
  int host_fifos;    /* FIFOs in pinned host memory (connect.c) */
  int nchannels_max; /* channels with FIFOs */
  int nslots;
  size_t slot_bytes;
  size_t fifo_bytes;       /* one channel's FIFO: header + slots */
  struct gpu_mem fifo_mem; /* my ring FIFOs (receive side), nchannels_max x fifo_bytes */
  char* next_fifo;         /* the next rank's FIFOs as I address them */
  uint64_t* steps;         /* device: DEV_STEP_WORDS counters per channel */
  /* One-shot LL AllReduce (dev.h): usable when every rank mapped every peer's buffer. */
  int ll_ok;
  int onehop_ok;       /* the one hop allowed: a peer across the network, point-to-point FIFOs to
                         every peer, MONEL_NET_ONEHOP_MAX above 0 */
  int onehop_doubling; /* RecDoubling replaces the one hop from this many ranks (0: never) */
  int onehop_doubling_pow2; /* ... on powers of two only (MONEL_NET_ONEHOP_DOUBLING unset) */
  int ll128_lines;          /* LL128 may use its lines in GPU memory (gpu_check_ll128) */
  struct gpu_mem ll_mem;    /* my LL buffer, on my GPU */
  uint32_t* ll_seq;         /* device: launches so far, per block */
  char** peer_ll;           /* every rank's LL buffer as I address it (nranks) */
  char** peer_ll_dev;       /* device: the same table, which the one-shot kernel reads */
  /* Point-to-point (gpu/p2p.c, device/p2p.cu): usable when every rank mapped every peer's FIFOs. */
  int p2p_ok;
  int p2p_nch;     /* channels per peer */
  int p2p_net_nch; /* ... per peer over the network (MONEL_NET_P2P_CHANNELS, <= p2p_nch) */
  int p2p_nslots;  /* FIFO slots per (peer, channel) */
  size_t p2p_slot_bytes;
  struct gpu_mem p2p_mem; /* my FIFOs, [source rank][channel] */
  uint64_t* p2p_steps;    /* device: DEV_STEP_WORDS counters per (peer, channel) */
  char** peer_p2p;        /* every rank's FIFOs as I address them (nranks) */
  int* p2p_local; /* rank -> its FIFOs' index in the p2p_mem of the ranks of its host (the same
                     on every rank of a host), -1 for a network peer */
  /* Direct signals (signal.c): each rank's signal words at sig_off in its p2p_mem;
   * on the host, the signals raised [peer][slot], then those consumed [peer][slot]. */
  size_t sig_off;
  uint32_t* sig_counts;
  /* The kernels' peer table (dev.h dev_peer, nranks entries; peer_table.c): peer_tab on the
   * host, peer_dev its copy in device memory that every point-to-point launch points to. Entry r
   * is written when the pair is connected and never changes after. p2p_flags[r]: GPU_PEER_*. */
  struct dev_peer* peer_tab;
  struct dev_peer* peer_dev;
  unsigned char* p2p_flags;
  int p2p_net_todo;           /* network peers whose channels are not all connected yet */
  uint64_t *want_all, *want0; /* scratch peer sets (gpu/peers.h) of the connect at first use */
  int p2p_eager;              /* MONEL_P2P_CONNECT=eager: every network peer's at init */
  /* Across hosts (gpu/net.c): the ring runs over the positions of comm->ring_order. */
  int my_ring_pos, ring_next, ring_prev; /* my position; the ranks I send to and receive from */
  int* ring_order_dev;                   /* device: position -> rank; NULL for the identity */
  int net_next, net_prev;                /* ring hops over the network */
  struct gpu_mem ring_mirror;            /* my mirror of the next rank's ring FIFOs (net_next) */
  /* Per network peer r: my FIFOs [channel] for it, then my mirror of its FIFOs [channel] for me
   * (one block, so that one slot delta serves both: dev.h), made with its connections. */
  struct gpu_mem* p2p_net_mem; /* nranks entries, made with the peer's connections */
  int net_gdr;                 /* the network FIFOs' slots are in device memory (gpu/net.c) */
  struct fifo_net* net;        /* the proxy's side of them */
  int* net_devs; /* the network devices channel c's connections use: net_devs[c % net_ndevs] */
  int net_ndevs;
  const struct net* net_ops;  /* the network they use */
  int net_conns;              /* connections in net */
  ncclResult_t net_setup_res; /* a setup that failed: no more are made */
  int proxy_held;
  uint64_t last_op; /* atomic: seq << 8 | coll of the last operation enqueued (for messages) */
  struct gpu_peer_map* maps; /* grows with the peers mapped */
  int nmaps, maps_cap;
  struct gmsg* msgs; /* host scratch: the messages of a batch */
  int msg_cap;
  cudaEvent_t join_ev;      /* joins the streams of a batch */
  cudaEvent_t order_ev;     /* orders a kernel after the previous one on another stream */
  cudaStream_t last_stream; /* stream of the comm's last kernel (valid if has_last) */
  int has_last;
  struct dev_p2p_args p2p_args;  /* host scratch: one launch's arguments */
  struct dev_p2p_args p2p_args2; /* ... and the next one's */
  /* Abort and progress (dev.h dev_ctl): ctl_host is pinned host memory mapped into the GPU
   * holding the abort word; ctl holds its device address and the device counters. ctr_host
   * receives copies of the counters on ctl_stream (engine.c poll_counters); ctr_seen is the
   * last complete copy. eager_seq: seq of the last operation launched outside stream capture
   * (a kernel, or a copy-engine operation that reports its progress: ce.c). */
  uint32_t* ctl_host;
  struct dev_ctl ctl;
  cudaStream_t ctl_stream;
  struct gpu_siblings* siblings; /* siblings.c; NULL: no other rank of the comm in this process */
  unsigned long long* ctr_host;
  unsigned long long ctr_seen[DEV_CTR_WORDS];
  int ctr_copying;
  uint64_t eager_seq; /* atomic */
  /* task_check.c: pointers and the stream that passed the checks lately */
#define GPU_GOOD_PTRS 4
  const void* good_ptrs[GPU_GOOD_PTRS];
  int good_next;
  cudaStream_t good_stream;
  /* Copy-engine path (gpu/ce.c): set up when any rank may use it. */
  int ce_mode;            /* TUNE_CE_* (core/tune.h; the same on every rank) */
  int ce_ok;              /* every rank mapped every peer's flags and staging */
  int ce_ready;           /* the path was set up (or found unusable): the same everywhere */
  struct gpu_mem ce_mem;  /* my flags and staging buffer, on my GPU */
  size_t ce_region;       /* staging bytes of one (writer, reader) pair */
  char** peer_ce;         /* every rank's ce_mem as I address it (nranks) */
  size_t ce_flags;        /* bytes of the flag block of ce_mem (ce.c) */
  uint32_t* ce_all_set;   /* host: ce_flags bytes of raised flags (gpu_ce_release) */
  size_t* ce_bytes;       /* host scratch: bytes to and from each peer (2 x nranks) */
  struct ce_msg* ce_msgs; /* host scratch: the messages of a batch */
  int ce_cap;
  size_t dev_bytes; /* device memory this comm allocated */
};

/* residency.c: bounds g->cta so that the kernels of the comm's ranks that share a GPU are
 * resident at once (collective: the same bound on every rank). */
ncclResult_t gpu_bound_blocks(struct ncclComm* comm, struct gpu_comm* g);
/* siblings.c: the ranks of the comm in this process free their buffers together, when the last
 * of them leaves. join: collective, at init. leave: 1 if the buffers were handed over (release
 * frees them, maybe now, maybe when the last sibling leaves), 0 if the caller frees them. */
ncclResult_t gpu_siblings_join(struct ncclComm* comm, struct gpu_comm* g);
int gpu_siblings_leave(struct gpu_comm* g, int dev, int over,
                       void (*release)(struct gpu_comm*, int dev, int over));
int gpu_same_process(const struct ncclComm* comm, int a, int b); /* ranks a and b: one process */
/* connect.c: CUDA opens an IPC handle once in a process (a second opening of it fails: already
 * mapped; seen on one H200 with two rank-threads a process mapping one peer buffer), so the
 * ranks of a process that map the same peer allocation share one mapping, closed when the last
 * of them lets go. */
cudaError_t gpu_ipc_open(const cudaIpcMemHandle_t* h, void** ptr);
void gpu_ipc_close(void* ptr);

/* connect.c: where the FIFOs live (collective: every rank decides alike); shared buffers; the
 * ring FIFOs (fails with a reason when the next GPU cannot be reached), the one-shot and the
 * point-to-point buffers (never fail for lack of peer access: ll_ok and p2p_ok say whether they
 * can be used). gpu_shared_unlink drops a host segment's name once every peer has mapped it. */
ncclResult_t gpu_choose_host_fifos(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_shared_alloc(struct ncclComm* comm, struct gpu_comm* g, size_t len, int host,
                              struct gpu_mem* m);
void gpu_shared_free(struct gpu_mem* m);
void gpu_shared_unlink(struct gpu_mem* m);
ncclResult_t gpu_connect_ring(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_connect_ll(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_connect_p2p(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_connect_ce(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_check_ll128(struct ncclComm* comm, struct gpu_comm* g);
void gpu_disconnect(struct gpu_comm* g);

/* peer_table.c: the kernels' peer table. gpu_peer_table_alloc makes it (and the per-peer host
 * arrays of gpu_comm) for the comm's nranks; gpu_peer_publish writes entry r, as filled in
 * peer_tab, to the device copy (on ctl_stream, waited for: the next launch sees it); its calls
 * are relaxed for stream capture, as a first use may come during one. gpu_peer_table_free
 * releases what gpu_peer_table_alloc made (the device table only once the kernels are over). */
ncclResult_t gpu_peer_table_alloc(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_peer_publish(struct gpu_comm* g, int r);
ncclResult_t gpu_peer_publish_all(struct gpu_comm* g, int nranks);
void gpu_peer_table_free(struct gpu_comm* g, int kernels_over);

/* net.c: connections across hosts. gpu_net_is: whether the connection with peer is a NET one;
 * gpu_net_any: whether any pair of the comm is (collective: the same on every rank);
 * gpu_machine_ranks: the comm's ranks on my machine (mine included), which share its cores.
 * gpu_ring_order fills the ring fields (and the device order table); gpu_host_fifo_alloc gives
 * private pinned host memory mapped for the GPU (freed by gpu_shared_free); gpu_net_connect
 * connects the ring's NET connections, and with MONEL_P2P_CONNECT=eager (gpu_p2p_eager) every
 * network peer's point-to-point ones, and starts the proxy on them (after gpu_connect_ring and
 * gpu_connect_p2p); gpu_net_connect_peers connects the point-to-point channels with the network
 * peers of the set `peers` (gpu/peers.h) not connected yet, and channel 0 alone with those of the
 * set `channel0` that have none (collective between each such pair: both ranks call it at the same
 * operation with the pair in the same set, gpu/peers.h) with their FIFOs (and, with GPUDirect RDMA,
 * the device blocks of their slots), adds them to the running set and then names them in the peer
 * table (peer_tab, gpu_peer_publish); gpu_net_free drains and closes them; gpu_net_free_buffers
 * frees their memory once no kernel of the process's ranks of the comm can touch it
 * (engine.c release_buffers, siblings.c). */
int gpu_net_is(const struct ncclComm* comm, int peer);
int gpu_net_any(const struct ncclComm* comm);
int gpu_machine_ranks(const struct ncclComm* comm);
ncclResult_t gpu_ring_order(struct ncclComm* comm, struct gpu_comm* g);
ncclResult_t gpu_host_fifo_alloc(struct gpu_comm* g, size_t len, struct gpu_mem* m);
ncclResult_t gpu_net_connect(struct ncclComm* comm, struct gpu_comm* g);
int gpu_p2p_eager(void);
ncclResult_t gpu_net_connect_peers(struct ncclComm* comm, struct gpu_comm* g, uint64_t* peers,
                                   uint64_t* channel0);
void gpu_net_free(struct ncclComm* comm, struct gpu_comm* g, int kernels_over);
void gpu_net_free_buffers(struct gpu_comm* g);
/* net.c: the slot delta (dev.h) of a FIFO block as the kernels address it: bytes from its
 * address to that of its slots in device memory, 0 when its slots follow its counters (the
 * point-to-point FIFOs' are in the peer table). */
int64_t gpu_slot_delta(const struct gpu_mem* m);

/* p2p.c: makes room for element n of a message list (*cap elements of elem bytes); the WARN
 * names the task. */
ncclResult_t gpu_list_grow(void** list, int* cap, int n, size_t elem, const struct task* t);
/* p2p.c: run the messages of Send/Recv/AlltoAll(v)/Gather/Scatter tasks together. */
int gpu_p2p_channels(int nchannels_max);
ncclResult_t gpu_p2p_run(struct ncclComm* comm, struct task* const* tasks, int ntasks);
/* engine.c: the dev_ctl of a launch on stream s that reports done_seq done when it finishes;
 * outside stream capture, operations up to issued_seq count as launched. */
struct dev_ctl gpu_ctl(struct gpu_comm* g, uint64_t done_seq, uint64_t issued_seq, cudaStream_t s);
/* driver.c: a driver function by name (NULL if there is none); whether stream s is being captured
 * (0 also when CUDA cannot tell). */
void* gpu_driver_fn(const char* name);
int gpu_capturing(cudaStream_t s);
/* driver.c, ncclCollConfig_t.launchCompletionEvent (task launch_event): whether the build and the
 * driver have launch-completion events (ncclInvalidUsage and a WARN naming fn if not); the launch
 * of a kernel of task t (NULL: a plain launch; ex: storage for it), which makes CUDA record the
 * event once every block of the kernel has begun, and launches a small kernel with programmatic
 * dependent launch (MONEL_LAUNCH_PDL); for a call that launches no kernel (the copy-engine path,
 * nothing to move), the event recorded on t's stream, before its copies. */
ncclResult_t gpu_launch_events_ok(const char* fn);
cudaError_t gpu_launch_with_event(const struct dev_launch_ex* ex, const void* kernel, unsigned grid,
                                  unsigned block, size_t shared_bytes, void* arg,
                                  cudaStream_t stream);
const struct dev_launch_ex* gpu_launch_of(const struct task* t, struct dev_launch_ex* ex);
ncclResult_t gpu_launch_event_record(const struct task* t);
/* device.c: the engine's device hooks (struct engine's device_count, current_device, mem_alloc,
 * mem_free). */
int gpu_device_count(void);
int gpu_current_device(void);
int gpu_device_of_busid(const char* busid);
ncclResult_t gpu_mem_alloc(void** ptr, size_t size, int* handled);
ncclResult_t gpu_mem_free(void* ptr, int* handled);
/* signal.c: the engine's direct signals (struct engine's signal_direct, signal_raise,
 * signal_wait); gpu_signal_bytes: the signal words a rank's p2p_mem ends with. */
size_t gpu_signal_bytes(int nranks);
int gpu_signal_direct(const struct ncclComm* comm, int peer);
ncclResult_t gpu_signal_raise(struct ncclComm* comm, int peer, int slot, cudaStream_t stream);
ncclResult_t gpu_signal_wait(struct ncclComm* comm, int peer, int slot, int count,
                             cudaStream_t stream);
/* signal.c: the engine's stream_wait (until the stream ran everything queued on it) and copy
 * (dst = src in stream order, any memory CUDA reaches), for the one-sided calls. */
ncclResult_t gpu_stream_wait(cudaStream_t stream, const char* fn);
ncclResult_t gpu_copy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                            const char* fn);
/* task_check.c: the engine's check_task. */
ncclResult_t gpu_check_task(struct ncclComm* comm, const struct task* t, const char* fn);
/* Streams of a batch other than its first: wait for the first (after = 0) or make the first wait
 * for them (after = 1). */
ncclResult_t gpu_join_streams(struct gpu_comm* g, struct task* const* tasks, int ntasks, int after);

/* ce.c: the copy-engine path (no SM) for AllGather, Broadcast and the point-to-point batches.
 * gpu_ce_setup at init sets it up when the comm's own policy asks for it (MONEL_COPY_ENGINE=1,
 * config.CTAPolicy = NCCL_CTA_POLICY_ZERO, MONEL_CE_MIN_BYTES); otherwise the first call with a
 * per-call NCCL_CTA_POLICY_ZERO (gpu_ce_zero) of a collective the path runs (gpu_ce_runs) sets it
 * up before the group runs (gpu_ce_prepare_needed, gpu_ce_prepare: the engine's prepare hooks,
 * collective). gpu_ce_wanted: whether the tasks run on the path (*yes); a per-call ZERO the path
 * cannot honour is ncclInvalidUsage, alike on every rank. */
ncclResult_t gpu_ce_setup(struct ncclComm* comm, struct gpu_comm* g);
int gpu_ce_zero(const struct task* t);
int gpu_ce_runs(enum coll_kind c);
int gpu_ce_prepare_needed(const struct ncclComm* comm, const struct task* tasks, int ntasks);
ncclResult_t gpu_ce_prepare(struct ncclComm* comm);
ncclResult_t gpu_ce_wanted(const struct ncclComm* comm, const struct gpu_comm* g,
                           struct task* const* tasks, int ntasks, int* yes);
ncclResult_t gpu_ce_run(struct ncclComm* comm, struct task* const* tasks, int ntasks);
void gpu_ce_free(struct gpu_comm* g);
/* Let the comm's streams blocked on copy-engine flags go on (an aborted comm; see ce.c). */
void gpu_ce_release(struct gpu_comm* g);
/* window.c: the engine's win_export, win_import and win_unmap (core/engine.h). */
struct window_rec;
void gpu_win_export(struct ncclComm* comm, const void* buff, size_t size, struct window_rec* rec);
void* gpu_win_import(struct ncclComm* comm, int peer, const struct window_rec* rec, void** map);
void gpu_win_unmap(struct ncclComm* comm, void* map);
/* launch.c: make stream s wait for the comm's previous kernel when that ran on another stream. */
ncclResult_t gpu_order_after_last(struct gpu_comm* g, cudaStream_t s);
/* launch.c: point-to-point channels a tree launch may spread over (each peer's; its trees:
 * gpu_tree_count of it). */
int gpu_tree_channels(const struct ncclComm* comm, const struct gpu_comm* g);
/* Launch one task of a group on its stream as its plan says (launch.c). */
ncclResult_t gpu_launch_task(struct ncclComm* comm, struct gpu_comm* g, struct task* t);

#endif

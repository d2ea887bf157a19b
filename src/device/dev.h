/* SPDX-License-Identifier: BSD-3-Clause */
/* What the host side of the CUDA engine (gpu/) hands to the kernels (device/): plain C structs
 * passed by value as kernel arguments, so a launch needs no allocation and no copy and can be
 * captured in a CUDA graph. Compiles as C11 and as CUDA.
 *
 * Ring connections (Simple protocol): one FIFO owned by the receiving rank, on its GPU, per
 * channel (layout in device/gpu_fifo.h):
 *   [tail u64][pad][head u64][pad][slot sizes] [slot 0][slot 1]...[slot nslots-1]
 *   tail: steps the sender has posted (written by the sender, remotely; read by the receiver)
 *   head: steps the receiver has released (written by the receiver; read by the sender, remotely)
 *   sizes: bytes the sender put in each slot (read by the proxy of a network connection)
 *   want: steps the receiver started waiting for (read by the proxy of a network connection)
 * A connection between hosts (a NET connection) has a FIFO on each side, both in pinned host
 * memory: the receiver's, and the sender's MIRROR of it, which its kernel fills exactly as it
 * would fill the peer's; the proxy thread (proxy/fifo_net.h) sends the mirror's slots and
 * receives them into the receiver's FIFO, advancing the same counters. With GPUDirect RDMA
 * (MONEL_NET_GDR) the slots of such a FIFO live in device memory instead, in a block laid out
 * as the host one: a slot is at the FIFO's address + its offset + the connection's slot delta
 * (the distance between the two blocks; 0 everywhere else), while tail, head, want and the
 * sizes stay in host memory. The NIC writes those slots and the proxy flushes each receive
 * before it moves the tail, so they are read like slots of my own GPU (through L2, not
 * uncached as host memory is).
 * Every remote access to a FIFO happens before the step its owner waits for, so once a rank's
 * kernels are done no peer touches its memory any more (its comm can be freed without a barrier).
 * Step counters live in device memory of the comm and carry over from one launch to the next.
 *
 * One-shot LL buffers (small AllReduce): every rank owns one buffer on its GPU, mapped by every
 * peer. Layout: [block b < DEV_LL_MAX_BLOCKS][parity 0/1][source rank < nranks][DEV_LL_LINES lines
 * of 16 bytes]. A line carries 8 bytes of data and the launch's 32-bit flag twice:
 *   { data lo u32, flag u32, data hi u32, flag u32 }
 * stored with one 16-byte volatile store; each 8-byte half is single-copy atomic, so a reader
 * that sees both flags equal to the launch's flag holds both halves of that launch's data. */
#ifndef MONEL_DEVICE_DEV_H
#define MONEL_DEVICE_DEV_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "algo/tree.h"
#include "device/gpu_fifo.h"

#define DEV_MAX_CHANNELS   64
#define DEV_NTHREADS       512
#define DEV_FIFO_HEADER    GPU_FIFO_HEADER /* bytes before slot 0 */
#define DEV_FIFO_TAIL      GPU_FIFO_TAIL
#define DEV_FIFO_HEAD      GPU_FIFO_HEAD
#define DEV_FIFO_WANT      GPU_FIFO_WANT
#define DEV_FIFO_SIZES     GPU_FIFO_SIZES
#define DEV_FIFO_MAX_SLOTS GPU_FIFO_MAX_SLOTS
/* Counters a connection keeps in device memory between launches: steps sent, steps received,
 * the last head seen from the receiver (a lower bound of it: no remote read at launch start). */
#define DEV_STEP_WORDS 4

#define DEV_LL_MAX_BLOCKS 64
#define DEV_LL_LINES      1024 /* lines per block per source rank: 8 KiB of data */
#define DEV_LL_LINE       16
#define DEV_LL_BLOCK_DATA ((size_t)DEV_LL_LINES * 8)
#define DEV_LL_MAX_BYTES  ((size_t)DEV_LL_MAX_BLOCKS * DEV_LL_BLOCK_DATA) /* 512 KiB per peer */
#define DEV_LL_NTHREADS   256

/* Protocols of the ring and tree kernels (NCCL's numbering: LL 0, LL128 1, Simple 2). How a step
 * of a FIFO connection is laid out, waited on and published (device/prims.cuh):
 *   Simple: raw data in a slot; the receiver waits for the tail, which the sender posts after a
 *     system fence.
 *   LL: 16-byte lines { data lo u32, flag u32, data hi u32, flag u32 } (the one-shot kernel's
 *     format), flag = the step number; the receiver polls the lines: no fence, no tail.
 *   LL128: 128-byte lines, 120 bytes of data and an 8-byte flag (the step number), each line
 *     stored by 8 lanes of one warp in one instruction; the receiver polls whole warps' lines.
 *     Correct only where a warp's 128-byte store reaches the reader whole: GPU memory of the same
 *     GPU, or of a peer over NVLink; elsewhere (gpu/connect.c gpu_check_ll128) the engine marks
 *     the connections as host memory, so that the tail publishes LL128's steps.
 * Every FIFO has three areas of nslots slots: Simple's, LL's and LL128's, so that no line ever
 * holds another protocol's stale bytes that could look like a flag. A connection in pinned host
 * memory (NET connections, whose slots the proxy moves, and NCCL_P2P_DISABLE=1) carries every
 * protocol's lines in the Simple area and publishes every step by the tail after a system fence,
 * as Simple does: no protocol relies on the order of stores to host memory. */
enum dev_proto { DEV_PROTO_LL = 0, DEV_PROTO_LL128 = 1, DEV_PROTO_SIMPLE = 2, DEV_PROTO_COUNT = 3 };
#define DEV_LL_SLOT_MAX    ((size_t)64 << 10)
#define DEV_LL128_SLOT_MAX ((size_t)128 << 10)
#define DEV_LL128_LINE     128
#define DEV_LL128_DATA     120

#ifdef __CUDACC__
#define DEV_HD __host__ __device__
#else
#define DEV_HD
#endif
/* Bytes of one slot of the LL and the LL128 area for Simple slots of slot_bytes. */
DEV_HD static inline size_t dev_ll_slot(size_t slot_bytes) {
  return slot_bytes < DEV_LL_SLOT_MAX ? slot_bytes : DEV_LL_SLOT_MAX;
}
DEV_HD static inline size_t dev_ll128_slot(size_t slot_bytes) {
  size_t s = slot_bytes < DEV_LL128_SLOT_MAX ? slot_bytes : DEV_LL128_SLOT_MAX;
  return s / DEV_LL128_LINE * DEV_LL128_LINE;
}
/* Bytes of one FIFO: header, then the Simple, LL and LL128 areas. */
DEV_HD static inline size_t dev_fifo_bytes(int nslots, size_t slot_bytes) {
  return DEV_FIFO_HEADER +
         (size_t)nslots * (slot_bytes + dev_ll_slot(slot_bytes) + dev_ll128_slot(slot_bytes));
}
/* Data bytes one step of protocol proto carries (the same on both sides of a connection). */
DEV_HD static inline size_t dev_proto_step_bytes(int proto, size_t slot_bytes) {
  if (proto == DEV_PROTO_LL) return dev_ll_slot(slot_bytes) / 2;
  if (proto == DEV_PROTO_LL128) return dev_ll128_slot(slot_bytes) / DEV_LL128_LINE * DEV_LL128_DATA;
  return slot_bytes;
}
/* Offset in a FIFO of the slot of step `step` for protocol proto; by_tail: a connection that
 * publishes by the tail (every protocol in the Simple area). */
DEV_HD static inline size_t dev_slot_offset(int proto, int by_tail, int nslots, size_t slot_bytes,
                                            uint64_t step) {
  size_t s = (size_t)(step % (uint64_t)nslots);
  if (by_tail || proto == DEV_PROTO_SIMPLE) return DEV_FIFO_HEADER + s * slot_bytes;
  size_t ll = dev_ll_slot(slot_bytes);
  if (proto == DEV_PROTO_LL) return DEV_FIFO_HEADER + (size_t)nslots * slot_bytes + s * ll;
  return DEV_FIFO_HEADER + (size_t)nslots * (slot_bytes + ll) + s * dev_ll128_slot(slot_bytes);
}

/* Bytes of one rank's one-shot LL buffer for nranks ranks. */
static inline size_t dev_ll_buffer_bytes(int nranks) {
  return (size_t)DEV_LL_MAX_BLOCKS * 2 * (size_t)nranks * DEV_LL_LINES * DEV_LL_LINE;
}

/* What every kernel of a comm shares with the host (gpu/engine.c). abort: a word of pinned host
 * memory mapped into the GPU; once the host sets it (ncclCommAbort, ncclCommRevoke, a dead peer)
 * every wait of every kernel of the comm gives up within DEV_ABORT_SPINS polls and the kernel
 * returns, its results undefined. ctr: counters in device memory, updated with fire-and-forget
 * reductions (no round trip): blocks started, blocks finished, the blocks of the running launch
 * that ended, and the highest seq of a launch whose blocks all ended (a copy-engine operation
 * writes its seq there from its stream: gpu/ce.c); the host copies
 * them now and then to see progress without synchronising (engine.c). Aborted blocks count as
 * finished too, so the host knows when they are gone. */
enum { DEV_CTR_STARTED, DEV_CTR_FINISHED, DEV_CTR_DONE_SEQ, DEV_CTR_GRID_ENDED, DEV_CTR_WORDS };
struct dev_ctl {
  const volatile uint32_t* abort;
  unsigned long long* ctr; /* DEV_CTR_WORDS */
  uint64_t seq;            /* the sequence number of the launch's last operation */
};
#define DEV_ABORT_SPINS 1024 /* polls of a wait between two looks at the abort word */

/* Collectives the ring kernel runs (values of dev_ring_args.coll). */
enum dev_coll { DEV_ALLREDUCE, DEV_BROADCAST, DEV_REDUCE, DEV_ALLGATHER, DEV_REDUCESCATTER };

struct dev_channel {
  char* send_fifo; /* the next rank's FIFO (peer memory, or my mirror of it for a NET
                      connection): slots, sizes and tail written, head read */
  char* recv_fifo; /* my FIFO: slots and tail read, head written */
};

/* One ring collective. count: AllReduce, Broadcast, Reduce: elements of the buffer; AllGather:
 * elements each rank contributes (sendcount); ReduceScatter: elements each rank keeps
 * (recvcount). Collectives that do not reduce run as bytes (dtype ncclUint8, op RED_SUM).
 * The ring runs over ring POSITIONS (topo/ring_order.h): pos and root are positions, and order
 * (device memory, NULL for the identity) maps a position to its rank, which places the chunks of
 * AllGather and ReduceScatter in the buffers. */
struct dev_ring_args {
  const void* in;
  void* out;
  size_t count;
  int coll; /* enum dev_coll */
  int root; /* Broadcast, Reduce: the root's ring position */
  int pos, nranks;
  const int* order; /* device: order[position] = rank, or NULL (position == rank) */
  int nchannels, nslots;
  size_t slot_bytes;
  int dtype;                 /* ncclDataType_t */
  int op;                    /* RED_* of util/red_op.h */
  unsigned char scalar[8];   /* PREMULSUM factor in the data type (host scalar) */
  const void* device_scalar; /* PREMULSUM factor read by the kernel, or NULL */
  uint64_t* steps;           /* DEV_STEP_WORDS per channel */
  int recv_by_tail; /* my receive FIFOs publish every step by the tail (Simple's area): pinned
                      host memory, the network, or LL128 without safe lines */
  int send_by_tail; /* ... the FIFOs I send into (pinned host memory, my mirror of them) */
  int64_t recv_delta, send_delta; /* slot deltas of my receive FIFOs, of those I send into */
  int proto;                      /* enum dev_proto */
  struct dev_ctl ctl;
  struct dev_channel ch[DEV_MAX_CHANNELS];
};

/* One peer of the point-to-point FIFOs as the kernels reach it: entry r of the comm's peer table,
 * nranks entries in device memory (gpu/peer_table.c), written once when the pair is connected
 * (at init on the host, at its first use across the network) and never changed after, so a
 * kernel (or a graph) that names peer r only runs once entry r is in place. The tree, the
 * point-to-point kernel and the one hop read it; nothing about a peer travels in the launch
 * arguments, so they do not grow with the comm. */
struct dev_peer {
  char* send_fifo;    /* channel 0 of the FIFOs I fill for the peer: in its memory, or my mirror
                         of them (NET); channel c at + c x fifo_bytes */
  char* recv_fifo;    /* channel 0 of my FIFOs that the peer fills */
  int64_t slot_delta; /* of both (see the top) */
  int recv_hostmem;   /* my FIFOs for the peer are pinned host memory: read uncached, steps
                         published by the tail */
  int send_by_tail;   /* the FIFOs I fill for it publish every step by the tail (pinned host
                         memory, or my mirror of them across the network) */
};

/* One double-binary-tree collective (algo/tree.h): AllReduce, Broadcast or Reduce over the
 * point-to-point FIFOs (the same FIFOs, step counters and network connections as Send/Recv).
 * node[t]: my parent and children in tree t (ranks). Blocks: nchannels x ntrees x 2 directions
 * (up: the reduction towards the root, down: the broadcast from it), block b serving direction
 * b & 1 of tree (b >> 1) % ntrees on channel (b >> 1) / ntrees, over point-to-point channel
 * channel * ntrees + tree of each link, so that no two blocks share a connection. Tree t and
 * channel c carry part t * nchannels + c of the buffer (tree_part), in chunks of tree_chunk
 * elements. */
#define DEV_TREE_NTHREADS 256
struct dev_tree_args {
  const void* in;
  void* out;
  size_t count;
  int coll;                             /* DEV_ALLREDUCE, DEV_BROADCAST or DEV_REDUCE */
  int nranks, nchannels, ntrees, proto; /* ntrees: 2, or 1 when there is one point-to-point
                                          channel per peer (tree 0 then carries everything) */
  int dtype, op;
  unsigned char scalar[8];
  const void* device_scalar;
  struct tree_node node[TREE_COUNT];
  int p2p_nch, nslots; /* of the point-to-point FIFOs */
  size_t slot_bytes, fifo_bytes;
  int all_by_tail;              /* every step published by the tail (LL128 where its lines are not
                                   safe), whatever the peer table says */
  uint64_t* steps;              /* DEV_STEP_WORDS per (peer, point-to-point channel) */
  const struct dev_peer* peers; /* device: the comm's peer table, nranks entries */
  struct dev_ctl ctl;
};

/* One-shot collectives over the LL buffers: every rank pushes to every peer what that peer needs
 * from it (AllReduce, AllGather: its input; ReduceScatter: the peer's chunk of its input), then
 * builds its output from what it received: AllReduce and ReduceScatter reduce the n pieces in
 * rank order (the same bits on every rank), AllGather stores piece r at out + r * bytes. Every
 * rank writes to and reads from every rank, which is what makes reusing the buffers safe.
 * count: AllReduce: elements of the buffer; AllGather: sendcount; ReduceScatter: recvcount.
 * count * size of dtype <= DEV_LL_MAX_BYTES. AllGather runs as bytes (ncclUint8, RED_SUM). */
struct dev_oneshot_args {
  const void* in;
  void* out;
  size_t count;
  int coll;                  /* DEV_ALLREDUCE, DEV_ALLGATHER or DEV_REDUCESCATTER */
  int rank, nranks, nblocks; /* nblocks: parts of DEV_LL_BLOCK_DATA bytes (at most 64) */
  int grid;                  /* thread blocks launched (<= nblocks), each taking parts in turn */
  int dtype, op;
  unsigned char scalar[8];
  const void* device_scalar;
  uint32_t* seq; /* device: launches so far, one counter per block */
  struct dev_ctl ctl;
  char* const* peer_ll; /* device: every rank's LL buffer as I address it (mine at [rank]) */
};

/* Point-to-point (Send/Recv, and AlltoAll(v), Gather, Scatter as lists of them): every rank owns
 * one FIFO per (source rank, p2p channel) on its GPU, mapped by every peer; a sender streams its
 * message through the FIFO the receiver owns for it, slot after slot, exactly as a ring step
 * does. A message of `bytes` uses dev_p2p_nch(bytes, nch) channels, part c of it on channel c,
 * so both sides cut it alike. One launch runs a list of messages: each block serves one
 * (peer, direction, channel) and moves that channel's part of every message of its list in
 * order, so messages between two ranks are matched in the order they were posted. */
#define DEV_P2P_MAX_OPS    128
#define DEV_P2P_MAX_BLOCKS 192
#define DEV_P2P_MAX_NCH    32
#define DEV_P2P_CHUNK      (32 << 10) /* a message gets one more channel per this many bytes */

enum dev_p2p_kind { DEV_P2P_SEND, DEV_P2P_RECV, DEV_P2P_SELF };

/* Channels a message of `bytes` uses when the comm has nch p2p channels per peer. */
static inline
#ifdef __CUDACC__
    __host__ __device__
#endif
    int
    dev_p2p_nch(size_t bytes, int nch) {
  size_t want = (bytes + DEV_P2P_CHUNK - 1) / DEV_P2P_CHUNK;
  return want < 1 ? 1 : want > (size_t)nch ? nch : (int)want;
}

struct dev_p2p_op {
  char* buf;    /* send: source; receive: destination */
  uint64_t len; /* bytes | channels << DEV_P2P_NCH_SHIFT: both sides of a message agree on both */
};
#define DEV_P2P_NCH_SHIFT  56
#define DEV_P2P_BYTES(len) ((size_t)((len) & (((uint64_t)1 << DEV_P2P_NCH_SHIFT) - 1)))
#define DEV_P2P_NCHOF(len) ((int)((len) >> DEV_P2P_NCH_SHIFT))

/* A block's work: kind, peer, channel; its messages are ops[first .. first + nops) (for
 * DEV_P2P_SELF, nops pairs: ops[first + 2k] the source, ops[first + 2k + 1] the destination). */
struct dev_p2p_block {
  int peer; /* any rank */
  unsigned char kind, ch;
  unsigned char first, nops; /* < and <= DEV_P2P_MAX_OPS */
};

struct dev_p2p_args {
  const struct dev_peer* peers; /* device: the comm's peer table (FIFOs [channel] per peer) */
  uint64_t* steps;              /* device: DEV_STEP_WORDS per (peer, channel) */
  int rank, nch;
  int nslots, nblocks;
  size_t slot_bytes, fifo_bytes; /* one FIFO: dev_fifo_bytes(nslots, slot_bytes) */
  struct dev_ctl ctl;
  struct dev_p2p_block blocks[DEV_P2P_MAX_BLOCKS];
  struct dev_p2p_op ops[DEV_P2P_MAX_OPS];
};

/* The one hop over the point-to-point FIFOs (channel 0; device/onehop.cu), for small buffers when
 * some peer is across the network, where each hop costs a trip through the proxies: every rank
 * sends what each peer needs of its input in one step, waits for every sender's, and folds the
 * inputs in rank order (the bits of the one-shot LL kernel, the same on every rank) or copies
 * them. One block; a rank's message fits one slot (count * size of dtype <= slot_bytes; count as
 * the NCCL call's, in bytes for AllGather and Broadcast). The FIFOs and step counters are those
 * of dev_p2p_args, one step per peer and direction, so Send/Recv on them stay in step. */
struct dev_onehop_args {
  const void* in;
  void* out;
  size_t count;
  int coll;     /* enum dev_coll: every one of them */
  int root;     /* Broadcast and Reduce: the root's rank */
  int doubling; /* AllReduce or AllGather by recursive doubling (algo/doubling.h, gpu/peers.h) */
  int rank, nranks;
  int dtype, op;
  unsigned char scalar[8];
  const void* device_scalar;
  int nch, nslots; /* of the point-to-point FIFOs (steps are DEV_STEP_WORDS per peer and channel) */
  size_t slot_bytes;
  uint64_t* steps;
  const struct dev_peer* peers; /* device: the comm's peer table (channel 0 of each) */
  struct dev_ctl ctl;
};

/* Dynamic shared memory of the one hop's block (device/onehop.cu): each peer's counters, FIFOs,
 * slot and source, DEV_ONEHOP_PEER_BYTES a peer, so the block holds every peer at once where
 * the GPU's shared memory per block (its opt-in maximum) holds nranks of them: thousands of
 * ranks on current GPUs. Beyond that the plan does not offer the one hop (gpu/caps.c). */
#define DEV_ONEHOP_PEER_BYTES 64
DEV_HD static inline size_t dev_onehop_smem(int nranks) {
  return (size_t)nranks * DEV_ONEHOP_PEER_BYTES;
}

/* A launch the host side makes itself instead of <<<grid, block, 0, stream>>>(*args) (gpu/driver.c:
 * with a launch-completion event, the event of ncclCollConfig_t.launchCompletionEvent). kernel:
 * the kernel's host address; shared_bytes: its dynamic shared memory; arg: its one argument (the
 * args struct). The launchers below take
 * one of these, or NULL for the plain launch. */
struct dev_launch_ex;
typedef cudaError_t (*dev_launch_ex_fn)(const struct dev_launch_ex* ex, const void* kernel,
                                        unsigned grid, unsigned block, size_t shared_bytes,
                                        void* arg, cudaStream_t stream);
struct dev_launch_ex {
  dev_launch_ex_fn launch;
  cudaEvent_t event; /* recorded once every block began, or NULL */
  int pdl_max;       /* programmatic dependent launch for grids of at most this many blocks */
};

#ifdef __cplusplus
extern "C" {
#endif
/* Launch a ring collective: one block of DEV_NTHREADS threads per channel on `stream`. */
cudaError_t dev_ring_launch(const struct dev_ring_args* args, cudaStream_t stream,
                            const struct dev_launch_ex* ex);
/* Launch a tree collective: 2 x ntrees x nchannels blocks of DEV_TREE_NTHREADS threads. */
cudaError_t dev_tree_launch(const struct dev_tree_args* args, cudaStream_t stream,
                            const struct dev_launch_ex* ex);
cudaError_t dev_tree_preload(int proto, int dtype, int op);
/* Launch a one-shot LL collective: grid blocks of DEV_LL_NTHREADS threads. */
cudaError_t dev_oneshot_launch(const struct dev_oneshot_args* args, cudaStream_t stream,
                               const struct dev_launch_ex* ex);
/* Launch a list of point-to-point messages: one block per entry of args->blocks. */
cudaError_t dev_p2p_launch(const struct dev_p2p_args* args, cudaStream_t stream,
                           const struct dev_launch_ex* ex);
cudaError_t dev_p2p_preload(void);
/* Launch a one hop (any collective of enum dev_coll): one block of DEV_NTHREADS threads. */
cudaError_t dev_onehop_launch(const struct dev_onehop_args* args, cudaStream_t stream,
                              const struct dev_launch_ex* ex);
cudaError_t dev_onehop_preload(int dtype, int op);
/* Load the kernels of (dtype, op) (dtype an ncclDataType_t, op a RED_* kind) on the current
 * device, so that no first launch pays for lazy module loading. */
cudaError_t dev_ring_preload(int proto, int dtype, int op);
cudaError_t dev_oneshot_preload(int dtype, int op);
#ifdef __cplusplus
}
#endif
#endif

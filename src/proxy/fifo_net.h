/* SPDX-License-Identifier: BSD-3-Clause */
/* NET connections of GPU FIFOs: the proxy's side of a FIFO connection whose two ranks talk over
 * the network (transport/net.h). Each side has a FIFO with the layout of device/gpu_fifo.h in
 * its own host memory: the receiver the FIFO its kernel reads, the sender a MIRROR of it that its
 * kernel fills as if it were the peer's. The proxy thread then
 *   - sender: sends every step the kernel posted (tail), only the slot's recorded bytes, with
 *     tag = the connection's id, and advances the mirror's head when a send completes;
 *   - receiver: keeps a receive posted into every slot the kernel released (head gates it, so no
 *     credit message is needed) and publishes tail = step + 1 when one completes.
 * Counters only grow, across launches and graph replays, exactly as the kernels' do. Nothing
 * here calls CUDA: a host thread can play the kernel (tests/unit/test_fifo_net.c).
 *
 * Where the slots live: after the counters, in pinned host memory (staged: the kernel copies
 * to and from host memory), or, with GPUDirect RDMA (fifo_net_gdr), in device memory of their
 * own, registered with the network as NET_PTR_CUDA so that the NIC reads and writes them; the
 * counters stay in host memory either way. A receive into device memory is flushed (net.h's
 * iflush, waited for) before the tail that shows it to the kernel moves.
 *
 * Life of a set (one per communicator): fifo_net_create; per connection fifo_net_listen
 * (receiver: fills the handle to give the sender) or fifo_net_peer_handle (sender); then
 * fifo_net_establish (connects/accepts every connection, registers memory); fifo_net_start hands
 * the set to the proxy thread (the caller holds the thread, proxy_acquire); fifo_net_free takes
 * it back and closes everything. A set grows, started or not: fifo_net_add makes room for more
 * connections, which take the same steps (listen or peer_handle, then establish) while the proxy
 * thread moves the others; it moves a connection only once establish has made it live. The
 * owner makes every call on one thread. A connection error stops the set and calls `fail` once,
 * on the proxy thread. Who may call: gpu/ (and tests). */
#ifndef MONEL_PROXY_FIFO_NET_H
#define MONEL_PROXY_FIFO_NET_H
#include <stddef.h>
#include "nccl.h"
#include "transport/net.h"

struct fifo_net;

struct fifo_net_spec {
  int is_send;
  char* fifo;  /* host address of the FIFO (receiver) or of the mirror (sender): its counters */
  char* slots; /* NULL: slot 0 at fifo + GPU_FIFO_HEADER (pinned host memory); else slot 0 in
                  device memory, as the network addresses it (registered as NET_PTR_CUDA) */
  int nslots;  /* <= GPU_FIFO_MAX_SLOTS */
  size_t slot_bytes;
  int peer;       /* rank of the other side */
  int tag;        /* connection id, the same on both sides */
  int dev;        /* the network device it is made on (this side's; each side picks its own) */
  char desc[160]; /* names the connection in messages: "ring channel 3 to rank 1 (host b)" */
};

/* `fail(arg, peer, sentence)`: a connection to `peer` broke; the sentence says which and how.
 * Runs on the proxy thread inside its pass: it must not free a set (fifo_net_free). */
typedef void (*fifo_net_fail_fn)(void* arg, int peer, const char* sentence);

/* Whether the GPU engine's network FIFOs of this process put their slots in device memory on
 * device dev of net (MONEL_NET_GDR: auto, 1 or 0; util/params.def): *gdr 1 or 0, and *why a
 * phrase for the log. ncclInvalidUsage with a sentence for MONEL_NET_GDR=1 on a network that
 * cannot register CUDA memory, or for another value. */
ncclResult_t fifo_net_gdr(const struct net* net, int dev, int* gdr, const char** why);

/* key: the job's secret the connections prove (net.h's listen/connect; NULL: none). Each
 * connection names its own device (fifo_net_spec.dev). */
ncclResult_t fifo_net_create(const struct net* net, const unsigned char* key, int nconns,
                             struct fifo_net** out);
/* Room for n more connections, numbered *first .. *first + n - 1; the set may be started. */
ncclResult_t fifo_net_add(struct fifo_net* f, int n, int* first);
/* Receiver side of connection i: listens and fills handle (NET_HANDLE_BYTES) for the sender. */
ncclResult_t fifo_net_listen(struct fifo_net* f, int i, const struct fifo_net_spec* spec,
                             void* handle);
/* Sender side of connection i: the handle the receiver filled. */
ncclResult_t fifo_net_peer_handle(struct fifo_net* f, int i, const struct fifo_net_spec* spec,
                                  const void* handle);
/* Connects and accepts every connection not yet live (non-blocking calls in one loop, so a rank
 * that is both sender and receiver serves both), registers the FIFOs' memory and makes them live.
 * Fails with a sentence naming the connection after timeout_s seconds, or as soon as *stop (when
 * not NULL: the comm's abort flag) is non-zero. */
ncclResult_t fifo_net_establish(struct fifo_net* f, int timeout_s, const int* stop);
/* Before fifo_net_start: the proxy thread runs fn(arg) before it progresses this set whenever
 * the set it progressed last had another key (the GPU engine makes the set's GPU current
 * there, key = its device, for a network that moves GPU memory with CUDA calls of its own, as
 * UCX's cuda_copy does on the calling thread). */
void fifo_net_on_thread(struct fifo_net* f, void (*fn)(void*), void* arg, int key);
/* Hands the set to the proxy thread. */
ncclResult_t fifo_net_start(struct fifo_net* f, fifo_net_fail_fn fail, void* arg);
/* Waits until every step posted on a send connection was sent (its head reached its tail), a
 * connection failed, or timeout_s passed (ncclInternalError). Call once the kernels are done:
 * the proxy may still be sending their last slots. */
ncclResult_t fifo_net_drain(struct fifo_net* f, int timeout_s);
/* Takes the set back from the proxy thread (if started), closes and frees it. Accepts NULL. */
void fifo_net_free(struct fifo_net* f);
/* 1 once a connection of the set failed. */
int fifo_net_failed(const struct fifo_net* f);

/* For the proxy thread: one pass over every started set; returns whether anything moved. */
int fifo_net_progress(void);
/* For the proxy thread: whether any set is started (the thread then never sleeps long). */
int fifo_net_active(void);
/* In a child of fork(): forget the parent's sets. */
void fifo_net_forget(void);

#endif

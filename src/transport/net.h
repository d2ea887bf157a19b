/* SPDX-License-Identifier: BSD-3-Clause */
/* The network interface: how bytes cross between hosts, for both engines. It has the shape of
 * NCCL's net plugin API (devices, properties, listen/connect/accept, memory registration,
 * isend/irecv/test, close), so that an external NCCL net plugin (v8-v11, net_plugin.c) and the
 * built-in TCP implementation (net_tcp.c, named "Socket" as in NCCL) are used the same way.
 *
 * Semantics (those of the plugin API):
 *  - listen() fills a NET_HANDLE_BYTES handle that the peer passes to connect().
 *  - listen() and connect() get the job's secret key (AUTH_KEY_BYTES bytes, os/auth.h; NULL:
 *    none): the built-in TCP network starts every connection with the handshake over it, so a
 *    connection that does not prove it is closed before any other byte is read. Both sides of
 *    a connection must pass a key, or neither. An external plugin never sees the key (its
 *    connections are its own); UCX's endpoints come from addresses exchanged over the
 *    authenticated bootstrap (docs/FAILURES.md, "Strangers").
 *  - connect() and accept() never block: they succeed with *comm == NULL until the connection is
 *    up, and are called again.
 *  - isend()/irecv() never block: *request == NULL means "not now, call again". A send matches
 *    the receive with the same tag, in order: the n-th send with a tag on a connection, the
 *    n-th receive with it, however the network delivers them. Tags are 0 to NET_MAX_TAG (the
 *    UCX network carries them in 16 bits). Sizes given to irecv are upper bounds; test()
 *    reports the received size. Zero-byte messages are legal and match.
 *  - test() sets *done; a finished request is freed by the implementation. An error from any
 *    call is fatal to that connection (ncclRemoteError when the peer went away).
 *  - Buffers are registered before use (reg_mr with NET_PTR_HOST for host memory, NET_PTR_CUDA
 *    for device memory where the device's properties allow it: net_props).
 *  - At most NET_MAX_REQUESTS requests are in flight per comm.
 *  - Closing (what every implementation may assume, and what callers keep to): a receive comm
 *    is closed with no receive posted, unless the connection failed (a call returned an error);
 *    a send comm is closed once its sends completed, unless the connection failed or the peer
 *    closed. Since a receive cannot be withdrawn through this interface, callers end their
 *    receives with the peer (net_link.c: the receiver's goodbye says how many receives it
 *    posted, and the sender completes each with a message; proxy/fifo_net.c, whose
 *    connections have no way back: the receiver never posts more than nslots receives beyond
 *    its kernel's steps, and the sender sends nslots empty messages after its last step).
 *    Monel's own networks still accept a close with requests in flight (the requests end with
 *    the comm; they log an INFO line for a receive comm), as a plugin may not.
 * Who may call: transport/ (the net transport's links) and proxy/. */
#ifndef MONEL_TRANSPORT_NET_H
#define MONEL_TRANSPORT_NET_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

#define NET_HANDLE_BYTES 128
#define NET_MAX_REQUESTS 32
#define NET_MAX_TAG      0xffff
#define NET_PTR_HOST     0x1
#define NET_PTR_CUDA     0x2

struct net_props {
  char name[64]; /* device name for logs */
  char pci_path[256];
  uint64_t guid;
  int ptr_support; /* NET_PTR_*: NET_PTR_CUDA when the device reads and writes GPU memory itself
                      (GPUDirect RDMA) */
  int cuda_copy;   /* reg_mr takes NET_PTR_CUDA although ptr_support lacks it: the network moves
                      GPU memory through copies of its own (UCX's cuda_copy over TCP); a test
                      setting (MONEL_NET_GDR=1), not a fast path */
  int speed_mbps;
  int port;
  float latency_us;
  int max_comms;
  int max_recvs;    /* most buffers one irecv may group */
  size_t max_bytes; /* largest single transfer */
};

struct net {
  const char* name; /* "Socket" for the built-in one; a plugin's own name */
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*get_properties)(int dev, struct net_props* props);
  ncclResult_t (*listen)(int dev, const unsigned char* key, void* handle, void** listen_comm);
  /* Optional (NULL: listen does). listen for a connection none of whose messages is larger than
   * max_bytes, either way: the network may give it no more than they can use (Socket: no data
   * sockets where every message travels on the control socket). net_listen_sized calls
   * whichever the network has. */
  ncclResult_t (*listen_sized)(int dev, const unsigned char* key, size_t max_bytes, void* handle,
                               void** listen_comm);
  ncclResult_t (*connect)(int dev, const unsigned char* key, void* handle, void** send_comm);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm);
  ncclResult_t (*reg_mr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*dereg_mr)(void* comm, void* mhandle);
  /* phandle (phandles: one per buffer, or NULL for none): the profiler's handle of the step
   * the message belongs to, which an external plugin gets as its parent for the events it
   * reports (net_set_profiler); NULL when the step is not profiled. Monel's own networks
   * ignore them. */
  ncclResult_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*test)(void* request, int* done, size_t* sizes);
  ncclResult_t (*close_send)(void* send_comm);
  ncclResult_t (*close_recv)(void* recv_comm);
  ncclResult_t (*close_listen)(void* listen_comm);
  /* Optional (NULL: the network never needs it). After receives into memory registered as
   * NET_PTR_CUDA completed, makes their bytes visible to the GPU before a kernel reads them: a
   * read through the network device after the data (NCCL's iflush). *request NULL: nothing to
   * wait for; else tested with test(). Callers call it for CUDA memory only. A flush is a
   * request of its comm: the caller leaves room for it among the NET_MAX_REQUESTS (a network
   * refuses a flush beyond them with an error; it has no "not now"). */
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, size_t* sizes, void** mhandles,
                         void** request);
  /* Optional, both or neither (NULL: the network has no doorbell and a progress thread polls
   * it, as with a plugin: NCCL's plugin API has no call to block on a plugin's events nor one
   * to wake a thread blocked in it). wait(ms) sleeps until one of the network's comms may
   * progress (a call such as test() may find news) or wake() is called, at most `ms`
   * milliseconds (< 0: no limit; a network that finds at run time that it cannot be woken
   * bounds the sleep itself). It may return early; the caller makes a pass over its comms
   * after it. wake() may be called from any thread, before or during a wait: a wake that comes
   * before the wait is kept for it. */
  void (*wait)(int ms);
  void (*wake)(void);
};

static inline ncclResult_t net_listen_sized(const struct net* n, int dev, const unsigned char* key,
                                            size_t max_bytes, void* handle, void** listen_comm) {
  return n->listen_sized ? n->listen_sized(dev, key, max_bytes, handle, listen_comm)
                         : n->listen(dev, key, handle, listen_comm);
}

/* The network this process uses, chosen once: an external plugin (NCCL_NET_PLUGIN, or
 * libnccl-net.so on the library path) unless NCCL_NET=Socket or NCCL_NET_PLUGIN=none, else the
 * built-in TCP one. NCCL_NET=NAME picks by name and fails with a sentence if none matches.
 * *dev is the device to use (0 unless the network reports several). */
ncclResult_t net_get(const struct net** out, int* dev);

/* The name that opened the external net plugin in use (NCCL_NET_PLUGIN's entry, or
 * libnccl-net.so), or NULL when none is: the tuner and profiler plugins look inside it too. With
 * NCCL_NET_PLUGIN set, the network is chosen first if it was not yet. */
const char* net_plugin_lib(void);

/* Where the profiler callback that an external plugin (interface v10+) got at init sends the
 * events the plugin reports: core/profiler.c sets it while a profiler plugin is loaded; unset
 * (NULL), a start gets a NULL event and the rest is dropped. type is NCCL's: 0 start, 1 stop,
 * 2 update, 3 update and stop; phandle is the one isend/irecv got (start only); id and data are
 * the plugin's. */
typedef ncclResult_t (*net_profiler_fn)(void** event, int type, void* phandle, int64_t id,
                                        void* data);
void net_set_profiler(net_profiler_fn fn);

/* The built-in UCX implementation (net_ucx*.c): UCP tagged messages, UCX loaded at run time. */
extern const struct net net_ucx;

/* The built-in TCP implementation (net_tcp.c, net_tcp_io.c). */
extern const struct net net_tcp;

/* A GPU comm of this process has `ranks` ranks on this machine (topo_machine_hash): they share
 * its cores, each with a proxy thread that polls while operations run. The built-in TCP network
 * sizes the helper threads of the connections it makes after this from the most reported
 * (topo_socket_threads), unless NCCL_SOCKET_NTHREADS is set; until a report, 2. The GPU engine
 * reports before its first network connection; the CPU engine does not (on 2 cores its
 * AllReduce of 2-16 MB across 2 hosts took 1.14-1.17x the time with one helper a connection). */
void net_machine_ranks(int ranks);

#endif

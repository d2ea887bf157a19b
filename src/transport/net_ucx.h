/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in UCX network's private parts, shared by net_ucx_lib.c (loading UCX at run time,
 * its context and the process's one worker) and net_ucx.c (the network over UCP tagged
 * messages). UCX is never linked: libucp.so.0 (MONEL_UCX_LIB) is opened with dlopen on first
 * use, so libnccl.so.2 loads without it.
 * Who may call: net_plugin.c (the choice of network) and these two files. */
#ifndef MONEL_TRANSPORT_NET_UCX_H
#define MONEL_TRANSPORT_NET_UCX_H
#include "transport/net.h"

#define UCX_MIN_MAJOR 1
#define UCX_MIN_MINOR 12

/* Loads UCX and makes its context and worker, once per process. ncclSuccess when UCX can be
 * used; otherwise ncclSystemError and net_ucx_why() says what was looked for and what failed
 * (nothing is logged here: the caller decides whether that is an error or an INFO line). */
ncclResult_t net_ucx_open(void);
const char* net_ucx_why(void);
/* After a successful open: 1 when UCX found an RDMA transport (rc, dc, ud: InfiniBand or
 * RoCE), and the transports it found ("tcp/eth0 rc_mlx5/mlx5_0:1 ..."). */
int net_ucx_rdma(void);
const char* net_ucx_transports(void);

#include <pthread.h>
#include "transport/ucx_api.h"
#include "transport/net_handle.h"
#include "os/socket.h"

/* The UCP and UCS functions Monel calls, found with dlsym in libucp.so.0 (and its libucs). */
struct ucx_fns {
  void (*get_version)(unsigned*, unsigned*, unsigned*);
  ucs_status_t (*config_read)(const char*, const char*, ucp_config_t**);
  void (*config_release)(ucp_config_t*);
  ucs_status_t (*config_modify)(ucp_config_t*, const char*, const char*);
  ucs_status_t (*init_version)(unsigned, unsigned, const ucp_params_t*, const ucp_config_t*,
                               ucp_context_h*);
  void (*cleanup)(ucp_context_h);
  ucs_status_t (*context_query)(ucp_context_h, ucp_context_attr_t*);
  void (*context_print_info)(const ucp_context_h, FILE*);
  ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t*, ucp_worker_h*);
  unsigned (*worker_progress)(ucp_worker_h);
  ucs_status_t (*listener_create)(ucp_worker_h, const ucp_listener_params_t*, ucp_listener_h*);
  void (*listener_destroy)(ucp_listener_h);
  ucs_status_t (*listener_query)(ucp_listener_h, ucp_listener_attr_t*);
  ucs_status_t (*listener_reject)(ucp_listener_h, ucp_conn_request_h);
  ucs_status_t (*ep_create)(ucp_worker_h, const ucp_ep_params_t*, ucp_ep_h*);
  ucs_status_ptr_t (*ep_close_nbx)(ucp_ep_h, const ucp_request_param_t*);
  void (*ep_print_info)(ucp_ep_h, FILE*);
  ucs_status_ptr_t (*tag_send_nbx)(ucp_ep_h, const void*, size_t, ucp_tag_t,
                                   const ucp_request_param_t*);
  ucs_status_ptr_t (*tag_recv_nbx)(ucp_worker_h, void*, size_t, ucp_tag_t, ucp_tag_t,
                                   const ucp_request_param_t*);
  ucp_tag_message_h (*tag_probe_nb)(ucp_worker_h, ucp_tag_t, ucp_tag_t, int, ucp_tag_recv_info_t*);
  ucs_status_t (*request_check_status)(void*);
  ucs_status_t (*tag_recv_request_test)(void*, ucp_tag_recv_info_t*);
  void (*request_cancel)(ucp_worker_h, void*);
  void (*request_free)(void*);
  ucs_status_t (*mem_map)(ucp_context_h, const ucp_mem_map_params_t*, ucp_mem_h*);
  ucs_status_t (*mem_unmap)(ucp_context_h, ucp_mem_h);
  const char* (*status_string)(ucs_status_t);
  ucs_status_t (*worker_get_efd)(ucp_worker_h, int*); /* these three may be NULL (polling) */
  ucs_status_t (*worker_arm)(ucp_worker_h);
  ucs_status_t (*worker_signal)(ucp_worker_h);
  ucs_status_t (*worker_get_address)(ucp_worker_h, ucp_address_t**, size_t*);
  void (*worker_release_address)(ucp_worker_h, ucp_address_t*);
  ucs_status_t (*rkey_pack)(ucp_context_h, ucp_mem_h, void**, size_t*);
  void (*rkey_buffer_release)(void*);
  ucs_status_t (*ep_rkey_unpack)(ucp_ep_h, const void*, ucp_rkey_h*);
  void (*rkey_destroy)(ucp_rkey_h);
  ucs_status_ptr_t (*get_nbx)(ucp_ep_h, void*, size_t, uint64_t, ucp_rkey_h,
                              const ucp_request_param_t*);
};

struct ucx_state {
  struct ucx_fns f;
  ucp_context_h ctx;
  ucp_worker_h worker; /* one per process, SERIALIZED: every UCX call holds `lock` */
  pthread_mutex_t lock;
  int rdma, cuda; /* an RDMA transport; CUDA memory registrable */
  int efd;        /* the worker's wakeup descriptor, or -1 */
  ucp_ep_h self;  /* an endpoint to the own worker, for flushes (made on the first) */
};
extern struct ucx_state ucx;

#define UCX_MAGIC     0x6d756378u /* "mucx" */
#define UCX_MAX_RECVS 8
#define KIND_DATA     0u
#define KIND_HELLO    1u
#define SEQ_BITS      23
#define CLOSE_WAIT_S  5.0

/* A message's UCP tag: kind (1 bit) | the listen comm's id (24 bits) | the caller's tag (16
 * bits, NET_MAX_TAG) | the message's number among its connection's messages with that tag
 * (SEQ_BITS, modulo 2^SEQ_BITS). The number makes each receive match its own message: UCX 1.13
 * can match a connection's later message with an earlier receive of the same tag while the
 * connection is being set up (docs/NET.md, "UCX: message order"). */
static inline uint64_t tag_of(unsigned kind, uint32_t id, int tag, uint32_t seq) {
  return ((uint64_t)kind << 63) | ((uint64_t)(id & 0xffffffu) << (SEQ_BITS + 16)) |
         ((uint64_t)(tag & NET_MAX_TAG) << SEQ_BITS) | (seq & ((1u << SEQ_BITS) - 1));
}

struct ucx_handle {
  uint32_t magic;
  uint32_t id;
  uint64_t token;
  union sock_addr addr;
};
_Static_assert(sizeof(struct ucx_handle) <= NET_HANDLE_BYTES, "UCX handle too large");

struct hello {
  uint32_t magic, pad;
  uint64_t token;
};

/* Per caller tag of a comm: messages sent (send comm) or receives posted (receive comm). */
struct tag_seq {
  int tag;
  uint32_t next;
};

struct ucomm {
  enum net_kind kind;
  void* handle;
  uint32_t id;
  uint64_t token;
  ucp_ep_h ep;
  int failed; /* atomic: the endpoint's error handler ran */
  ucs_status_t fail_status;
  int nreqs;
  void* reqs[NET_MAX_REQUESTS]; /* handles of requests in flight */
  struct tag_seq* seqs;         /* one per tag used, nseqs of them */
  int nseqs;
  struct hello hello; /* send: the hello sent; listen: the hello received */
  void* hello_req;
  /* listen comm */
  ucp_listener_h listener;
  ucp_conn_request_h pending;
  struct ucomm* rc; /* the receive comm being accepted */
  int accepted;
};

struct ureq {
  struct ucomm* c;
  void* handle;
  int n, is_send;
  void* r[UCX_MAX_RECVS]; /* UCX's requests; NULL once finished */
  size_t size[UCX_MAX_RECVS];
};

struct umr {
  ucp_mem_h memh;
  int type;
  char* base; /* the registered range */
  size_t len;
  ucp_rkey_h rkey; /* for flush reads through ucx.self (made on the first) */
};

int ucx_failed(struct ucomm* c);
struct ucomm* get_comm(void* handle, enum net_kind kind, const char* call);
ncclResult_t status_res(ucs_status_t s, const char* what);
ncclResult_t ucx_open_or_warn(void);
void ep_end(struct ucomm* c, int force);
void req_drop(void* r);
ncclResult_t ucx_devices(int* ndev);
ncclResult_t ucx_get_properties(int dev, struct net_props* p);
ncclResult_t ucx_listen(int dev, const unsigned char* key, void* handle, void** out);
ncclResult_t ucx_connect(int dev, const unsigned char* key, void* handle, void** out);
ncclResult_t ucx_accept(void* listen_comm, void** out);
/* net.h's wait and wake (net_ucx_lib.c): sleep on the worker's wakeup descriptor (armed with
 * ucp_worker_arm) until UCX has an event or net_ucx_wake (ucp_worker_signal) is called, at most
 * `ms` milliseconds (< 0: no limit; a millisecond when UCX has no ucp_worker_signal); without a
 * descriptor (UCX lacks the functions or gives none) one short nap. Without the descriptor or
 * ucp_worker_signal, net_ucx_wake does nothing. */
void net_ucx_wait(int ms);
void net_ucx_wake(void);

#endif

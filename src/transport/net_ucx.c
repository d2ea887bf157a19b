/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in UCX network ("UCX"): Monel's network interface (net.h) over UCP tagged messages,
 * so that InfiniBand and RoCE (UCX's rc, dc and ud transports), GPUDirect RDMA and UCX's TCP are
 * reached through one library that clusters already install. UCX is loaded at run time
 * (net_ucx_lib.c).
 *
 * - One UCP worker per process, made on first use and progressed by every call (test above
 *   all); UCX calls are serialized by one lock. A worker per comm would open every transport's
 *   resources (sockets, queue pairs, completion queues) once per comm, and Monel opens dozens
 *   of comms per rank (two per link and direction, 8 channels per GPU peer).
 * - Connecting: the listener's handle carries the address of a UCP listener (ucp_listener,
 *   bound to the bootstrap's interface, port chosen by the system), a 64-bit token and the
 *   listen comm's id. The connector makes an endpoint to that address (UCX's client-server
 *   mode: it exchanges the workers' addresses itself, then picks the best transports, RDMA
 *   when there is one) and sends a hello with the token. A worker address does not fit in the
 *   128-byte handle once UCX has several devices or shared-memory transports (215 bytes with
 *   UCX 1.13's default transports on a plain machine), which is why it is not carried there.
 *   A UCX listen comm takes one connection (Monel listens once per connection).
 * - Messages: tag = kind (1 bit) | the listen comm's id (24 bits) | the caller's tag (16 bits)
 *   | the message's number among the connection's messages with that tag (23 bits), counted by
 *   the send comm per send and by the receive comm per receive posted. So each connection's
 *   messages match only its own receives, and each receive exactly its message, in net.h's
 *   order even where UCX delivers otherwise: UCX 1.13 over TCP can match a later message of an
 *   endpoint with an earlier receive while the endpoint is being set up (docs/NET.md, "UCX:
 *   message order"). The number wraps at 2^23: harmless unless a connection's sender runs 2^23
 *   messages of one tag ahead of its receiver. A grouped receive posts one tagged receive per
 *   buffer.
 * - Failures: endpoints use UCX's peer error handling; a peer that dies or closes fails the
 *   comm (ncclRemoteError). A receive comm whose peer is gone still takes messages that arrived
 *   before (they are probed); a receive that can no longer complete is cancelled.
 * - Memory: reg_mr is ucp_mem_map of host memory, or of CUDA memory when UCX registers it
 *   (UCS_MEMORY_TYPE_CUDA); the device advertises NET_PTR_CUDA only when that is so and an RDMA
 *   transport exists (GPUDirect RDMA); otherwise callers stage through host memory, unless
 *   they insist (cuda_copy in the properties: UCX then copies GPU memory itself, over TCP).
 * - Close: see net.h. Sends still in flight make close_send force the endpoint closed (the
 *   peer sees an error); receives still posted at close_recv are cancelled with an INFO line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "util/check.h"
#include "util/param.h"
#include "os/socket.h"
#include "transport/net.h"
#include "transport/net_handle.h"
#include "transport/net_ucx.h"

static uint32_t next_id = 1;

int ucx_failed(struct ucomm* c) {
  return __atomic_load_n(&c->failed, __ATOMIC_ACQUIRE);
}

static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  struct ucomm* c = net_handle_get(arg, NET_KIND_SEND);
  if (c == NULL) c = net_handle_get(arg, NET_KIND_RECV);
  if (c == NULL || c->ep != ep) return;
  c->fail_status = status;
  __atomic_store_n(&c->failed, 1, __ATOMIC_RELEASE);
  INFO(LOG_NET, "NET/UCX: the %s comm of connection %u lost its peer: %s",
       c->kind == NET_KIND_SEND ? "send" : "receive", c->id, ucx.f.status_string(status));
}

static void on_conn_request(ucp_conn_request_h req, void* arg) {
  struct ucomm* l = net_handle_get(arg, NET_KIND_LISTEN);
  if (l == NULL || l->pending != NULL || l->rc != NULL || l->accepted) {
    ucx.f.listener_reject(l ? l->listener : NULL, req);
    return;
  }
  l->pending = req;
}

struct ucomm* get_comm(void* handle, enum net_kind kind, const char* call) {
  struct ucomm* c = net_handle_get(handle, kind);
  if (c == NULL)
    WARN("NET/UCX: %s was given %p, which is not an open %s", call, handle, net_kind_name(kind));
  return c;
}

ncclResult_t status_res(ucs_status_t s, const char* what) {
  if (s == UCS_ERR_MESSAGE_TRUNCATED) {
    WARN("NET/UCX: %s: a message was larger than the receive posted for it", what);
    return ncclInvalidUsage;
  }
  if (s == UCS_ERR_NO_MEMORY) {
    WARN("NET/UCX: %s: UCX is out of memory", what);
    return ncclSystemError;
  }
  return ncclRemoteError; /* canceled, reset, unreachable, timed out: the peer is gone */
}

ncclResult_t ucx_open_or_warn(void) {
  if (net_ucx_open() == ncclSuccess) return ncclSuccess;
  WARN("NET/UCX: %s", net_ucx_why());
  return ncclSystemError;
}

ncclResult_t ucx_devices(int* ndev) {
  *ndev = 0;
  NCCLCHECK(ucx_open_or_warn());
  *ndev = 1;
  return ncclSuccess;
}

ncclResult_t ucx_get_properties(int dev, struct net_props* p) {
  if (dev != 0) {
    WARN("NET/UCX: device %d asked; UCX is one device (0) here, spread by UCX over its NICs", dev);
    return ncclInvalidArgument;
  }
  NCCLCHECK(ucx_open_or_warn());
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "UCX %s", net_ucx_transports());
  p->ptr_support = NET_PTR_HOST | (ucx.cuda && ucx.rdma ? NET_PTR_CUDA : 0);
  p->cuda_copy = ucx.cuda && !ucx.rdma;
  p->speed_mbps = ucx.rdma ? 100000 : 10000;
  p->latency_us = 0;
  p->max_comms = 1 << 20;
  p->max_recvs = UCX_MAX_RECVS;
  p->max_bytes = (size_t)1 << 46;
  return ncclSuccess;
}

static ucs_status_ptr_t post_hello_recv(struct ucomm* l) {
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  return ucx.f.tag_recv_nbx(ucx.worker, &l->hello, sizeof l->hello, tag_of(KIND_HELLO, l->id, 0, 0),
                            ~(ucp_tag_t)0, &prm);
}

ncclResult_t ucx_listen(int dev, const unsigned char* key, void* handle, void** out) {
  (void)key; /* net.h: UCX's connections are not authenticated by Monel */
  ncclResult_t res = ncclSuccess;
  struct ucomm* l = NULL;
  struct ucx_handle h;
  char ifname[64];
  *out = NULL;
  NCCLCHECK(ucx_open_or_warn());
  memset(&h, 0, sizeof h);
  NCCLCHECK(sock_iface_find(&h.addr, ifname, sizeof ifname));
  if (h.addr.sa.sa_family == AF_INET)
    h.addr.sin.sin_port = 0;
  else
    h.addr.sin6.sin6_port = 0;
  NCCLCALLOC(l, 1);
  l->kind = NET_KIND_LISTEN;
  if (getrandom(&l->token, sizeof l->token, 0) != sizeof l->token)
    l->token ^= (uint64_t)(uintptr_t)l;
  l->handle = net_handle_new(l, NET_KIND_LISTEN);
  if (l->handle == NULL) {
    free(l);
    return ncclSystemError;
  }
  pthread_mutex_lock(&ucx.lock);
  l->id = next_id++ & 0xffffffu;
  ucp_listener_params_t lp;
  memset(&lp, 0, sizeof lp);
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = &h.addr.sa;
  lp.sockaddr.addrlen = sock_addr_len(&h.addr);
  lp.conn_handler.cb = on_conn_request;
  lp.conn_handler.arg = l->handle;
  ucs_status_t s = ucx.f.listener_create(ucx.worker, &lp, &l->listener);
  ucp_listener_attr_t la;
  memset(&la, 0, sizeof la);
  la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  if (s == UCS_OK) s = ucx.f.listener_query(l->listener, &la);
  if (s == UCS_OK) {
    memcpy(&h.addr, &la.sockaddr, sizeof h.addr);
    l->hello_req = post_hello_recv(l);
    if (UCS_PTR_IS_ERR(l->hello_req)) s = UCS_PTR_STATUS(l->hello_req), l->hello_req = NULL;
  }
  pthread_mutex_unlock(&ucx.lock);
  if (s != UCS_OK) {
    WARN("NET/UCX: could not listen on %s: %s; set NCCL_SOCKET_IFNAME to an interface UCX can "
         "use (UCX_TLS must allow a connection manager: tcp or rdmacm)",
         ifname, ucx.f.status_string(s));
    if (l->listener) ucx.f.listener_destroy(l->listener);
    net_handle_free(l->handle);
    free(l);
    return ncclSystemError;
  }
  h.magic = UCX_MAGIC;
  h.id = l->id;
  h.token = l->token;
  l->token = h.token;
  memset(handle, 0, NET_HANDLE_BYTES);
  memcpy(handle, &h, sizeof h);
  *out = l->handle;
  return res;
}

static ncclResult_t make_ep(struct ucomm* c, const union sock_addr* to, ucp_conn_request_h from) {
  ucp_ep_params_t ep;
  memset(&ep, 0, sizeof ep);
  ep.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = on_ep_error;
  ep.err_handler.arg = c->handle;
  if (to != NULL) {
    ep.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = &to->sa;
    ep.sockaddr.addrlen = sock_addr_len(to);
  } else {
    ep.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
    ep.conn_request = from;
  }
  ucs_status_t s = ucx.f.ep_create(ucx.worker, &ep, &c->ep);
  if (s != UCS_OK) {
    char a[80];
    WARN("NET/UCX: could not make an endpoint %s %s: %s", to ? "to" : "for a connection from",
         to ? sock_addr_to_str(to, a, sizeof a) : "a peer", ucx.f.status_string(s));
    c->ep = NULL;
    return ncclSystemError;
  }
  return ncclSuccess;
}

static struct ucomm* comm_new(enum net_kind kind, uint32_t id, uint64_t token) {
  struct ucomm* c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->kind = kind;
  c->id = id;
  c->token = token;
  c->handle = net_handle_new(c, kind);
  if (c->handle == NULL) {
    free(c);
    return NULL;
  }
  return c;
}

/* Ends an endpoint: flushed when nothing is pending and the peer is there, else forced; waits
 * at most CLOSE_WAIT_S. Holds the lock. */
void ep_end(struct ucomm* c, int force) {
  if (c->ep == NULL) return;
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = force || ucx_failed(c) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t r = ucx.f.ep_close_nbx(c->ep, &prm);
  if (r != NULL && !UCS_PTR_IS_ERR(r)) {
    double t0 = sock_time_now();
    while (ucx.f.request_check_status(r) == UCS_INPROGRESS && sock_time_now() - t0 < CLOSE_WAIT_S)
      ucx.f.worker_progress(ucx.worker);
    ucx.f.request_free(r);
  }
  c->ep = NULL;
}

void req_drop(void* r) {
  if (r == NULL || UCS_PTR_IS_ERR(r)) return;
  if (ucx.f.request_check_status(r) == UCS_INPROGRESS) ucx.f.request_cancel(ucx.worker, r);
  ucx.f.request_free(r);
}

ncclResult_t ucx_connect(int dev, const unsigned char* key, void* handle, void** out) {
  (void)key;
  struct ucx_handle h;
  *out = NULL;
  memcpy(&h, handle, sizeof h);
  if (h.magic != UCX_MAGIC) {
    WARN("NET/UCX: connect was given a handle that no UCX listen filled (magic 0x%x); the peers "
         "must use the same network (NCCL_NET)",
         h.magic);
    return ncclInvalidArgument;
  }
  NCCLCHECK(ucx_open_or_warn());
  struct ucomm* c = comm_new(NET_KIND_SEND, h.id, h.token);
  if (c == NULL) return ncclSystemError;
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&ucx.lock);
  res = make_ep(c, &h.addr, NULL);
  if (res == ncclSuccess) {
    c->hello.magic = UCX_MAGIC;
    c->hello.token = h.token;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    c->hello_req = ucx.f.tag_send_nbx(c->ep, &c->hello, sizeof c->hello,
                                      tag_of(KIND_HELLO, c->id, 0, 0), &prm);
    if (UCS_PTR_IS_ERR(c->hello_req)) {
      WARN("NET/UCX: the hello to connection %u could not be sent: %s", c->id,
           ucx.f.status_string(UCS_PTR_STATUS(c->hello_req)));
      c->hello_req = NULL;
      ep_end(c, 1);
      res = ncclSystemError;
    }
  }
  pthread_mutex_unlock(&ucx.lock);
  if (res != ncclSuccess) {
    net_handle_free(c->handle);
    free(c);
    return res;
  }
  *out = c->handle;
  return ncclSuccess;
}

/* Holds the lock. The hello arrived: the receive comm is the connection's if the token is the
 * listener's; a wrong token drops that connection and waits for another. */
static ncclResult_t accept_hello(struct ucomm* l, void** out) {
  ucs_status_t s = ucx.f.request_check_status(l->hello_req);
  if (s == UCS_INPROGRESS || l->rc == NULL) return ncclSuccess;
  ucx.f.request_free(l->hello_req);
  l->hello_req = NULL;
  if (s == UCS_OK && l->hello.magic == UCX_MAGIC && l->hello.token == l->token) {
    l->accepted = 1;
    *out = l->rc->handle;
    l->rc = NULL;
    return ncclSuccess;
  }
  WARN("NET/UCX: a connection to listen comm %u presented a wrong hello (%s); dropped", l->id,
       s == UCS_OK ? "another token" : ucx.f.status_string(s));
  ep_end(l->rc, 1);
  net_handle_free(l->rc->handle);
  free(l->rc);
  l->rc = NULL;
  l->hello_req = post_hello_recv(l);
  if (UCS_PTR_IS_ERR(l->hello_req)) {
    l->hello_req = NULL;
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t ucx_accept(void* listen_comm, void** out) {
  struct ucomm* l = get_comm(listen_comm, NET_KIND_LISTEN, "accept");
  ncclResult_t res = ncclSuccess;
  *out = NULL;
  if (l == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&ucx.lock);
  ucx.f.worker_progress(ucx.worker);
  if (l->accepted) {
    WARN("NET/UCX: listen comm %u already accepted its connection; a UCX listen comm takes one",
         l->id);
    res = ncclInvalidUsage;
  } else if (l->rc == NULL && l->pending != NULL) {
    l->rc = comm_new(NET_KIND_RECV, l->id, l->token);
    if (l->rc == NULL)
      res = ncclSystemError;
    else if ((res = make_ep(l->rc, NULL, l->pending)) != ncclSuccess) {
      net_handle_free(l->rc->handle);
      free(l->rc);
      l->rc = NULL;
    }
    l->pending = NULL;
  }
  if (res == ncclSuccess && l->hello_req != NULL) res = accept_hello(l, out);
  pthread_mutex_unlock(&ucx.lock);
  return res;
}

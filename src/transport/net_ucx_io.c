/* SPDX-License-Identifier: BSD-3-Clause */
/* The UCX network's data path (net_ucx.c has the design): memory registration, tagged sends
 * and receives, test (which progresses the worker), close, and the `struct net` itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "transport/net.h"
#include "transport/net_ucx.h"

#define FAILED_PROGRESS                                                                            \
  64 /* progress calls a receive of a failed comm gets before it is cancelled */

static struct ucomm* get_any_comm(void* handle, const char* call) {
  struct ucomm* c = net_handle_get(handle, NET_KIND_SEND);
  if (c == NULL) c = net_handle_get(handle, NET_KIND_RECV);
  if (c == NULL)
    WARN("NET/UCX: %s was given %p, which is not an open send or receive comm", call, handle);
  return c;
}

static ncclResult_t u_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  struct ucomm* c = get_any_comm(comm, "reg_mr");
  struct umr* m = NULL;
  *mhandle = NULL;
  if (c == NULL) return ncclInvalidArgument;
  if (type != NET_PTR_HOST && type != NET_PTR_CUDA) {
    WARN("NET/UCX: reg_mr was asked for memory of type %d; UCX takes host or CUDA memory", type);
    return ncclInvalidArgument;
  }
  if (type == NET_PTR_CUDA && !ucx.cuda) {
    WARN("NET/UCX: CUDA memory cannot be registered: this UCX has no CUDA support (a CUDA-aware "
         "UCX, e.g. the libucx-cu12/libucx-cu13 wheels, with cuda in UCX_TLS, provides it)");
    return ncclInvalidArgument;
  }
  NCCLCALLOC(m, 1);
  m->type = type;
  m->base = data;
  m->len = size;
  if (size > 0) {
    ucp_mem_map_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                   UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    p.address = data;
    p.length = size;
    p.memory_type = type == NET_PTR_CUDA ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    pthread_mutex_lock(&ucx.lock);
    ucs_status_t s = ucx.f.mem_map(ucx.ctx, &p, &m->memh);
    pthread_mutex_unlock(&ucx.lock);
    if (s != UCS_OK) {
      WARN("NET/UCX: could not register %zu bytes of %s memory at %p: %s", size,
           type == NET_PTR_CUDA ? "CUDA" : "host", data, ucx.f.status_string(s));
      free(m);
      return ncclSystemError;
    }
  }
  *mhandle = net_handle_new(m, NET_KIND_MR);
  if (*mhandle == NULL) {
    if (m->memh) ucx.f.mem_unmap(ucx.ctx, m->memh);
    free(m);
    return ncclSystemError;
  }
  return ncclSuccess;
}

static ncclResult_t u_dereg_mr(void* comm, void* mhandle) {
  struct ucomm* c = get_any_comm(comm, "dereg_mr");
  struct umr* m = net_handle_get(mhandle, NET_KIND_MR);
  if (c == NULL) return ncclInvalidArgument;
  if (m == NULL) {
    WARN("NET/UCX: dereg_mr was given %p, which is not a live registration", mhandle);
    return ncclInvalidArgument;
  }
  if (m->memh) {
    pthread_mutex_lock(&ucx.lock);
    if (m->rkey) ucx.f.rkey_destroy(m->rkey);
    ucx.f.mem_unmap(ucx.ctx, m->memh);
    pthread_mutex_unlock(&ucx.lock);
  }
  net_handle_free(mhandle);
  free(m);
  return ncclSuccess;
}

/* A request handle for q, remembered by its comm. */
static ncclResult_t req_wrap(struct ucomm* c, struct ureq* q, void** out) {
  q->c = c;
  q->handle = net_handle_new(q, NET_KIND_REQUEST);
  if (q->handle == NULL) return ncclSystemError;
  c->reqs[c->nreqs++] = q->handle;
  *out = q->handle;
  return ncclSuccess;
}

/* Holds the lock: cancels what is left of q and frees it. */
static void req_end(struct ureq* q) {
  struct ucomm* c = q->c;
  for (int i = 0; i < q->n; i++) req_drop(q->r[i]);
  for (int i = 0; i < c->nreqs; i++)
    if (c->reqs[i] == q->handle) {
      c->reqs[i] = c->reqs[--c->nreqs];
      break;
    }
  net_handle_free(q->handle);
  free(q);
}

/* A tag of net.h's range, else a WARN naming the call. */
static int tag_ok(int tag, const char* call) {
  if (tag >= 0 && tag <= NET_MAX_TAG) return 1;
  WARN("NET/UCX: %s was given tag %d; tags are 0 to %d", call, tag, NET_MAX_TAG);
  return 0;
}

/* Holds the lock. The number of the next message (send comm) or receive (receive comm) with
 * `tag` on c, 0 at its first use; NULL when out of memory. */
static uint32_t* seq_of(struct ucomm* c, int tag) {
  for (int i = 0; i < c->nseqs; i++)
    if (c->seqs[i].tag == tag) return &c->seqs[i].next;
  struct tag_seq* s = realloc(c->seqs, (size_t)(c->nseqs + 1) * sizeof *s);
  if (s == NULL) return NULL;
  c->seqs = s;
  s[c->nseqs].tag = tag;
  s[c->nseqs].next = 0;
  return &s[c->nseqs++].next;
}

static void op_param(ucp_request_param_t* p, void* mhandle) {
  struct umr* m = mhandle ? net_handle_get(mhandle, NET_KIND_MR) : NULL;
  memset(p, 0, sizeof *p);
  if (m != NULL) {
    p->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p->memory_type = m->type == NET_PTR_CUDA ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  }
}

static ncclResult_t u_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                            void* phandle, void** request) {
  struct ucomm* c = get_comm(send_comm, NET_KIND_SEND, "isend");
  ncclResult_t res = ncclSuccess;
  *request = NULL;
  if (c == NULL || !tag_ok(tag, "isend")) return ncclInvalidArgument;
  if (ucx_failed(c)) return ncclRemoteError;
  pthread_mutex_lock(&ucx.lock);
  if (c->nreqs < NET_MAX_REQUESTS) {
    struct ureq* q = calloc(1, sizeof *q);
    uint32_t* seq = q ? seq_of(c, tag) : NULL;
    ucp_request_param_t p;
    op_param(&p, mhandle);
    ucs_status_ptr_t r =
        seq ? ucx.f.tag_send_nbx(c->ep, data, size, tag_of(KIND_DATA, c->id, tag, *seq), &p)
            : UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (UCS_PTR_IS_ERR(r)) {
      res = status_res(UCS_PTR_STATUS(r), "a send could not be posted");
      free(q);
    } else {
      ++*seq;
      q->n = 1;
      q->is_send = 1;
      q->r[0] = r;
      q->size[0] = size;
      if ((res = req_wrap(c, q, request)) != ncclSuccess) req_drop(r), free(q);
    }
  }
  ucx.f.worker_progress(ucx.worker);
  pthread_mutex_unlock(&ucx.lock);
  return res;
}

/* Holds the lock. The UCP tags of a receive's n buffers: each the next receive of its tag on c
 * (a tag given twice: the later buffer takes the later message). The numbers are taken only
 * once the receive is posted (recv_taken). */
static ncclResult_t recv_tags(struct ucomm* c, int n, const int* tags, ucp_tag_t* out) {
  for (int i = 0; i < n; i++) {
    uint32_t* seq = seq_of(c, tags[i]);
    if (seq == NULL) return ncclSystemError;
    uint32_t k = *seq;
    for (int j = 0; j < i; j++) k += tags[j] == tags[i];
    out[i] = tag_of(KIND_DATA, c->id, tags[i], k);
  }
  return ncclSuccess;
}

static void recv_taken(struct ucomm* c, int n, const int* tags) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < c->nseqs; k++)
      if (c->seqs[k].tag == tags[i]) c->seqs[k].next++;
}

/* A comm whose peer is gone may still receive what arrived before: every message must be
 * waiting. */
static int all_arrived(int n, const ucp_tag_t* utags) {
  ucp_tag_recv_info_t info;
  for (int i = 0; i < n; i++)
    if (ucx.f.tag_probe_nb(ucx.worker, utags[i], ~(ucp_tag_t)0, 0, &info) == NULL) return 0;
  return 1;
}

static ncclResult_t u_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                            void** mhandles, void** phandles, void** request) {
  struct ucomm* c = get_comm(recv_comm, NET_KIND_RECV, "irecv");
  ncclResult_t res = ncclSuccess;
  *request = NULL;
  if (c == NULL) return ncclInvalidArgument;
  if (n < 1 || n > UCX_MAX_RECVS) {
    WARN("NET/UCX: irecv was asked to group %d buffers; UCX groups 1 to %d", n, UCX_MAX_RECVS);
    return ncclInvalidArgument;
  }
  for (int i = 0; i < n; i++)
    if (!tag_ok(tags[i], "irecv")) return ncclInvalidArgument;
  ucp_tag_t utags[UCX_MAX_RECVS];
  pthread_mutex_lock(&ucx.lock);
  ucx.f.worker_progress(ucx.worker);
  if ((res = recv_tags(c, n, tags, utags)) != ncclSuccess) {
    WARN("NET/UCX: out of memory for a receive's tags");
  } else if (ucx_failed(c) && !all_arrived(n, utags)) {
    res = ncclRemoteError;
  } else if (c->nreqs < NET_MAX_REQUESTS) {
    struct ureq* q = calloc(1, sizeof *q);
    if (q == NULL) res = ncclSystemError;
    for (int i = 0; q != NULL && i < n; i++) {
      ucp_request_param_t p;
      op_param(&p, mhandles ? mhandles[i] : NULL);
      /* always a request, whose size ucp_tag_recv_request_test reports (UCX 1.13 leaves
       * recv_info unfilled when a receive finishes at once) */
      p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
      ucs_status_ptr_t r =
          ucx.f.tag_recv_nbx(ucx.worker, data[i], sizes[i], utags[i], ~(ucp_tag_t)0, &p);
      q->n = i + 1;
      if (UCS_PTR_IS_ERR(r)) {
        res = status_res(UCS_PTR_STATUS(r), "a receive could not be posted");
        break;
      }
      q->r[i] = r;
    }
    if (q != NULL && res == ncclSuccess) res = req_wrap(c, q, request);
    if (q != NULL && res == ncclSuccess) recv_taken(c, n, tags);
    if (q != NULL && res != ncclSuccess) {
      for (int i = 0; i < q->n; i++) req_drop(q->r[i]);
      free(q);
    }
  }
  pthread_mutex_unlock(&ucx.lock);
  return res;
}

/* Holds the lock. One step of q: finished parts freed; *err on a failure. */
static int req_step(struct ureq* q, ucs_status_t* err) {
  int left = 0;
  for (int i = 0; i < q->n; i++) {
    if (q->r[i] == NULL) continue;
    ucp_tag_recv_info_t info;
    ucs_status_t s = q->is_send ? ucx.f.request_check_status(q->r[i])
                                : ucx.f.tag_recv_request_test(q->r[i], &info);
    if (s == UCS_INPROGRESS) {
      left++;
      continue;
    }
    ucx.f.request_free(q->r[i]);
    q->r[i] = NULL;
    if (s != UCS_OK && *err == UCS_OK) *err = s;
    if (s == UCS_OK && !q->is_send) q->size[i] = info.length;
  }
  return left;
}

static ncclResult_t u_test(void* request, int* done, size_t* sizes) {
  struct ureq* q = net_handle_get(request, NET_KIND_REQUEST);
  ncclResult_t res = ncclSuccess;
  *done = 0;
  if (q == NULL) {
    WARN("NET/UCX: test was given %p, which is not a request in flight", request);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&ucx.lock);
  ucx.f.worker_progress(ucx.worker);
  ucs_status_t err = UCS_OK;
  int left = req_step(q, &err);
  /* A receive whose sender is gone: what arrived before still completes, the rest never will. */
  for (int k = 0; left > 0 && err == UCS_OK && !q->is_send && ucx_failed(q->c); k++) {
    if (k == FAILED_PROGRESS) {
      err = q->c->fail_status != UCS_OK ? q->c->fail_status : UCS_ERR_CONNECTION_RESET;
      break;
    }
    ucx.f.worker_progress(ucx.worker);
    left = req_step(q, &err);
  }
  if (err != UCS_OK) {
    res = status_res(err, q->is_send ? "a send failed" : "a receive failed");
    req_end(q);
  } else if (left == 0) {
    *done = 1;
    if (sizes != NULL)
      for (int i = 0; i < q->n; i++) sizes[i] = q->size[i];
    req_end(q);
  }
  pthread_mutex_unlock(&ucx.lock);
  return res;
}

/* Holds the lock. The remote key of m, for reads through the endpoint to the own worker. */
static ucs_status_t flush_key(struct umr* m) {
  ucs_status_t s = UCS_OK;
  if (ucx.self == NULL) {
    ucp_address_t* addr = NULL;
    size_t len = 0;
    if ((s = ucx.f.worker_get_address(ucx.worker, &addr, &len)) != UCS_OK) return s;
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof ep);
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = addr;
    s = ucx.f.ep_create(ucx.worker, &ep, &ucx.self);
    ucx.f.worker_release_address(ucx.worker, addr);
    if (s != UCS_OK) return s;
  }
  if (m->rkey == NULL) {
    void* packed = NULL;
    size_t len = 0;
    if ((s = ucx.f.rkey_pack(ucx.ctx, m->memh, &packed, &len)) != UCS_OK) return s;
    s = ucx.f.ep_rkey_unpack(ucx.self, packed, &m->rkey);
    ucx.f.rkey_buffer_release(packed);
  }
  return s;
}

/* A read of the last bytes of the last non-empty buffer, through the own worker: it completes
 * after the data written into that memory before it (the network's writes into GPU memory are
 * not ordered with the GPU's reads otherwise). GPU memory without an RDMA transport needs none:
 * UCX copied the bytes in itself (cuda_copy) before the receive completed. */
static ncclResult_t u_iflush(void* recv_comm, int n, void** data, size_t* sizes, void** mhandles,
                             void** request) {
  struct ucomm* c = get_comm(recv_comm, NET_KIND_RECV, "iflush");
  ncclResult_t res = ncclSuccess;
  *request = NULL;
  if (c == NULL) return ncclInvalidArgument;
  int k = n - 1;
  while (k >= 0 && (sizes[k] == 0 || mhandles == NULL || mhandles[k] == NULL)) k--;
  if (k < 0) return ncclSuccess; /* nothing arrived in registered memory */
  struct umr* m = net_handle_get(mhandles[k], NET_KIND_MR);
  char* at = (char*)data[k] + sizes[k] - (sizes[k] < 8 ? sizes[k] : 8);
  if (m == NULL || m->memh == NULL || at < m->base || at + 8 > m->base + m->len) {
    WARN("NET/UCX: iflush was given a buffer outside the registration it names");
    return ncclInvalidArgument;
  }
  if (m->type == NET_PTR_CUDA && !ucx.rdma) return ncclSuccess;
  if (c->nreqs >= NET_MAX_REQUESTS) {
    WARN("NET/UCX: iflush was called with %d requests in flight on its comm (net.h: a caller "
         "leaves room for the flush)",
         c->nreqs);
    return ncclInternalError;
  }
  pthread_mutex_lock(&ucx.lock);
  ucs_status_t s = flush_key(m);
  struct ureq* q = NULL;
  if (s == UCS_OK && (q = calloc(1, sizeof *q)) == NULL) s = UCS_ERR_NO_MEMORY;
  if (s == UCS_OK) {
    ucp_request_param_t p;
    memset(&p, 0, sizeof p);
    ucs_status_ptr_t r = ucx.f.get_nbx(ucx.self, &q->size[1], sizes[k] < 8 ? sizes[k] : 8,
                                       (uint64_t)(uintptr_t)at, m->rkey, &p);
    if (UCS_PTR_IS_ERR(r)) {
      s = UCS_PTR_STATUS(r);
      free(q);
    } else {
      q->n = 1;
      q->is_send = 1; /* tested like a send: by its status */
      q->r[0] = r;
      if ((res = req_wrap(c, q, request)) != ncclSuccess) req_drop(r), free(q);
    }
  }
  pthread_mutex_unlock(&ucx.lock);
  if (s != UCS_OK) {
    WARN("NET/UCX: the flush read of a receive failed: %s", ucx.f.status_string(s));
    return ncclSystemError;
  }
  return res;
}

/* Holds the lock. */
static void comm_end(struct ucomm* c, int force) {
  while (c->nreqs > 0) req_end(net_handle_get(c->reqs[0], NET_KIND_REQUEST));
  req_drop(c->hello_req);
  c->hello_req = NULL;
  ep_end(c, force);
  net_handle_free(c->handle);
  free(c->seqs);
  free(c);
}

static ncclResult_t u_close_send(void* send_comm) {
  struct ucomm* c = get_comm(send_comm, NET_KIND_SEND, "close_send");
  if (c == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&ucx.lock);
  comm_end(c, c->nreqs > 0); /* sends in flight: the peer learns it from the forced close */
  pthread_mutex_unlock(&ucx.lock);
  return ncclSuccess;
}

static ncclResult_t u_close_recv(void* recv_comm) {
  struct ucomm* c = get_comm(recv_comm, NET_KIND_RECV, "close_recv");
  if (c == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&ucx.lock);
  if (c->nreqs > 0)
    INFO(LOG_NET,
         "NET/UCX: receive comm of connection %u closed with %d receives posted; they "
         "are cancelled",
         c->id, c->nreqs);
  comm_end(c, 0);
  pthread_mutex_unlock(&ucx.lock);
  return ncclSuccess;
}

static ncclResult_t u_close_listen(void* listen_comm) {
  struct ucomm* l = get_comm(listen_comm, NET_KIND_LISTEN, "close_listen");
  if (l == NULL) return ncclInvalidArgument;
  pthread_mutex_lock(&ucx.lock);
  if (l->pending != NULL) ucx.f.listener_reject(l->listener, l->pending);
  ucx.f.listener_destroy(l->listener);
  if (l->rc != NULL) comm_end(l->rc, 1);
  l->listener = NULL;
  comm_end(l, 0);
  pthread_mutex_unlock(&ucx.lock);
  return ncclSuccess;
}

const struct net net_ucx = {
    .name = "UCX",
    .devices = ucx_devices,
    .get_properties = ucx_get_properties,
    .listen = ucx_listen,
    .connect = ucx_connect,
    .accept = ucx_accept,
    .reg_mr = u_reg_mr,
    .dereg_mr = u_dereg_mr,
    .isend = u_isend,
    .irecv = u_irecv,
    .test = u_test,
    .close_send = u_close_send,
    .close_recv = u_close_recv,
    .close_listen = u_close_listen,
    .iflush = u_iflush,
    .wait = net_ucx_wait,
    .wake = net_ucx_wake,
};

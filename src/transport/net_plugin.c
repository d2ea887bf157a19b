/* SPDX-License-Identifier: BSD-3-Clause */
/* Choosing the network of this process (net_get), and the adapter that makes an external NCCL
 * net plugin (interface v8 to v11, net_plugin_abi.h) a `struct net`.
 *
 * Loading: NCCL_NET=Socket takes the built-in TCP network and loads nothing. Otherwise each
 * candidate of NCCL_NET_PLUGIN (a comma list; unset: libnccl-net.so; "none": no candidate) is
 * opened with dlopen as given, then, for a bare NAME, as libnccl-net-NAME.so; its table is the
 * newest of ncclNetPlugin_v11 .. _v8 it exports. With NCCL_NET=NAME a plugin of another name is
 * skipped. The first plugin whose init succeeds and that has a device able to move host memory
 * is used; a plugin that fails is skipped with an INFO line. Without one, the built-in network
 * is used, unless NCCL_NET named something that no candidate is (a sentence, ncclInvalidUsage).
 *
 * The adapter wraps the plugin's comms and requests in handles of its own (net_handle.h), so a
 * stale or made-up handle is refused before the plugin sees it. v8 carries int sizes: a send
 * above 2^31-1 bytes is refused with a sentence (a receive's upper bound is clamped, since no
 * sender can exceed it). v10 connect gets a config with trafficClass -1. v10+ isend/irecv get
 * the caller's profiler handles, and the profiler callback given to init forwards the plugin's
 * events to what net_set_profiler names (core/profiler.c). v11 init runs once with comm id 0: Monel
 * chooses one network per process, and never finalizes it. Memory types translate to the
 * plugin's NCCL_PTR_* bits; CUDA memory is registered only on a device that advertises
 * NCCL_PTR_CUDA (else refused with a sentence), and iflush reaches the plugin's. */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/check.h"
#include "util/param.h"
#include "util/plugin_lib.h"
#include "transport/net.h"
#include "transport/net_handle.h"
#include "transport/net_plugin_abi.h"
#include "transport/net_ucx.h"

#define GROUP_MAX 64 /* buffers of one grouped receive the adapter converts */

static struct {
  int version;
  union {
    const struct netp_v8* v8;
    const struct netp_v9* v9;
    const struct netp_v10* v10;
    const struct netp_v11* v11;
  } t;
  void* ctx; /* v11 */
  void* lib;
  uint64_t cuda_devs; /* bit d: device d advertises NCCL_PTR_CUDA (devices 0..63) */
} plug;

/* Members whose signature is the same in every version. */
#define PCALL(member, ...)                                                                         \
  (plug.version == 8    ? plug.t.v8->member(__VA_ARGS__)                                           \
   : plug.version == 9  ? plug.t.v9->member(__VA_ARGS__)                                           \
   : plug.version == 10 ? plug.t.v10->member(__VA_ARGS__)                                          \
                        : plug.t.v11->member(__VA_ARGS__))
/* Whether the plugin fills that member (optional ones may be NULL). */
#define PHAS(member)                                                                               \
  (plug.version == 8    ? plug.t.v8->member != NULL                                                \
   : plug.version == 9  ? plug.t.v9->member != NULL                                                \
   : plug.version == 10 ? plug.t.v10->member != NULL                                               \
                        : plug.t.v11->member != NULL)

/* A wrapped comm keeps the handles of its requests in flight: closing it ends them too, so a
 * request of a closed comm is refused instead of reaching the plugin. */
struct pwrap {
  void* p;                      /* the plugin's comm or request */
  int n;                        /* request: buffers */
  struct pwrap* comm;           /* request: its comm */
  void* self;                   /* request: its handle */
  void* reqs[NET_MAX_REQUESTS]; /* comm: handles of its requests in flight */
  int nreqs;
  int cuda; /* comm: its device advertises NCCL_PTR_CUDA */
};

/* ---- what the plugin calls ------------------------------------------------------------------ */

static net_profiler_fn profiler_fn; /* net_set_profiler; read atomically, the plugin calls */
                                    /* from the progress thread */

void net_set_profiler(net_profiler_fn fn) {
  __atomic_store_n(&profiler_fn, fn, __ATOMIC_RELEASE);
}

static ncclResult_t plugin_profile(void** event, int type, void* phandle, int64_t id, void* ext) {
  net_profiler_fn fn = __atomic_load_n(&profiler_fn, __ATOMIC_ACQUIRE);
  if (event == NULL) return ncclSuccess;
  if (fn != NULL) return fn(event, type, phandle, id, ext);
  if (type == 0) *event = NULL;
  return ncclSuccess;
}

/* ---- the adapter ---------------------------------------------------------------------------- */

static ncclResult_t wrap(void* p, enum net_kind kind, int n, void** out) {
  struct pwrap* w = NULL;
  NCCLCALLOC(w, 1);
  w->p = p;
  w->n = n;
  *out = net_handle_new(w, kind);
  if (*out == NULL) {
    free(w);
    return ncclSystemError;
  }
  return ncclSuccess;
}

static int dev_cuda(int dev) {
  return dev >= 0 && dev < 64 && (plug.cuda_devs >> dev & 1);
}

/* A listen, send or receive comm; cuda: its device advertises NCCL_PTR_CUDA. */
static ncclResult_t wrap_comm(void* p, enum net_kind kind, int cuda, void** out) {
  NCCLCHECK(wrap(p, kind, 0, out));
  ((struct pwrap*)net_handle_get(*out, kind))->cuda = cuda;
  return ncclSuccess;
}

/* A request of comm c; *out stays NULL when NET_MAX_REQUESTS are in flight (not now). */
static ncclResult_t wrap_req(struct pwrap* c, void* p, int n, void** out) {
  NCCLCHECK(wrap(p, NET_KIND_REQUEST, n, out));
  struct pwrap* r = net_handle_get(*out, NET_KIND_REQUEST);
  r->comm = c;
  r->self = *out;
  c->reqs[c->nreqs++] = *out;
  return ncclSuccess;
}

static void req_forget(struct pwrap* r) {
  struct pwrap* c = r->comm;
  for (int i = 0; i < c->nreqs; i++)
    if (c->reqs[i] == r->self) {
      c->reqs[i] = c->reqs[--c->nreqs];
      break;
    }
}

static struct pwrap* unwrap(void* handle, enum net_kind kind, const char* call) {
  struct pwrap* w = net_handle_get(handle, kind);
  if (w == NULL)
    WARN("net plugin %s: %s was given %p, which is not an open %s", plug.t.v8->name, call, handle,
         net_kind_name(kind));
  return w;
}

/* A send or receive comm. */
static struct pwrap* unwrap_comm(void* handle, const char* call) {
  struct pwrap* w = net_handle_get(handle, NET_KIND_SEND);
  if (w == NULL) w = net_handle_get(handle, NET_KIND_RECV);
  if (w == NULL)
    WARN("net plugin %s: %s was given %p, which is not an open send or receive comm",
         plug.t.v8->name, call, handle);
  return w;
}

static void unwrap_free(void* handle, struct pwrap* w) {
  net_handle_free(handle);
  free(w);
}

static ncclResult_t p_devices(int* ndev) {
  return PCALL(devices, ndev);
}

static void props_copy(struct net_props* out, const char* name, const char* pci, uint64_t guid,
                       int ptr, int speed, int port, float latency, int comms, int recvs) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", name ? name : "?");
  snprintf(out->pci_path, sizeof out->pci_path, "%s", pci ? pci : "");
  out->guid = guid;
  out->ptr_support =
      (ptr & NETP_PTR_HOST ? NET_PTR_HOST : 0) | (ptr & NETP_PTR_CUDA ? NET_PTR_CUDA : 0);
  out->speed_mbps = speed;
  out->port = port;
  out->latency_us = latency;
  out->max_comms = comms;
  out->max_recvs = recvs;
}

static ncclResult_t p_get_properties(int dev, struct net_props* props) {
  if (plug.version == 8) {
    struct netp_props_v8 p;
    memset(&p, 0, sizeof p);
    NCCLCHECK(plug.t.v8->get_properties(dev, &p));
    props_copy(props, p.name, p.pci_path, p.guid, p.ptr_support, p.speed, p.port, p.latency,
               p.max_comms, p.max_recvs);
    props->max_bytes = INT_MAX;
    return ncclSuccess;
  }
  union { /* v9 and v10 fill the v9 struct, v11 its own, which starts the same */
    struct netp_props_v9 v9;
    struct netp_props_v11 v11;
  } u;
  memset(&u, 0, sizeof u);
  if (plug.version == 11)
    NCCLCHECK(plug.t.v11->get_properties(dev, &u.v11));
  else if (plug.version == 10)
    NCCLCHECK(plug.t.v10->get_properties(dev, &u.v9));
  else
    NCCLCHECK(plug.t.v9->get_properties(dev, &u.v9));
  const struct netp_props_v9* p = &u.v9;
  props_copy(props, p->name, p->pci_path, p->guid, p->ptr_support, p->speed, p->port, p->latency,
             p->max_comms, p->max_recvs);
  props->max_bytes = p->max_p2p_bytes ? p->max_p2p_bytes : (size_t)-1;
  return ncclSuccess;
}

static ncclResult_t p_listen(int dev, const unsigned char* key, void* handle, void** listen_comm) {
  (void)key; /* net.h: a plugin's connections are its own */
  void* p = NULL;
  *listen_comm = NULL;
  if (plug.version == 11)
    NCCLCHECK(plug.t.v11->listen(plug.ctx, dev, handle, &p));
  else if (plug.version == 10)
    NCCLCHECK(plug.t.v10->listen(dev, handle, &p));
  else if (plug.version == 9)
    NCCLCHECK(plug.t.v9->listen(dev, handle, &p));
  else
    NCCLCHECK(plug.t.v8->listen(dev, handle, &p));
  return wrap_comm(p, NET_KIND_LISTEN, dev_cuda(dev), listen_comm);
}

static ncclResult_t p_connect(int dev, const unsigned char* key, void* handle, void** send_comm) {
  (void)key;
  void* p = NULL;
  struct netp_dev_handle* dh = NULL;
  struct netp_config cfg = {.traffic_class = -1};
  *send_comm = NULL;
  if (plug.version == 8)
    NCCLCHECK(plug.t.v8->connect(dev, handle, &p, &dh));
  else if (plug.version == 9)
    NCCLCHECK(plug.t.v9->connect(dev, handle, &p, &dh));
  else if (plug.version == 10)
    NCCLCHECK(plug.t.v10->connect(dev, &cfg, handle, &p, &dh));
  else
    NCCLCHECK(plug.t.v11->connect(plug.ctx, dev, handle, &p, &dh));
  return p == NULL ? ncclSuccess : wrap_comm(p, NET_KIND_SEND, dev_cuda(dev), send_comm);
}

static ncclResult_t p_accept(void* listen_comm, void** recv_comm) {
  struct pwrap* l = unwrap(listen_comm, NET_KIND_LISTEN, "accept");
  void* p = NULL;
  struct netp_dev_handle* dh = NULL;
  *recv_comm = NULL;
  if (l == NULL) return ncclInvalidArgument;
  NCCLCHECK(PCALL(accept, l->p, &p, &dh));
  return p == NULL ? ncclSuccess : wrap_comm(p, NET_KIND_RECV, l->cuda, recv_comm);
}

static ncclResult_t p_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  struct pwrap* c = unwrap_comm(comm, "reg_mr");
  *mhandle = NULL;
  if (c == NULL) return ncclInvalidArgument;
  if (type != NET_PTR_HOST && type != NET_PTR_CUDA) {
    WARN("net plugin %s: reg_mr was asked for memory of type %d (host %d or CUDA %d)",
         plug.t.v8->name, type, NET_PTR_HOST, NET_PTR_CUDA);
    return ncclInvalidArgument;
  }
  if (type == NET_PTR_CUDA && !c->cuda) {
    WARN("net plugin %s: reg_mr was asked for CUDA memory on a device that does not advertise "
         "it (no NCCL_PTR_CUDA in its properties)",
         plug.t.v8->name);
    return ncclInvalidArgument;
  }
  return PCALL(reg_mr, c->p, data, size, type == NET_PTR_CUDA ? NETP_PTR_CUDA : NETP_PTR_HOST,
               mhandle);
}

static ncclResult_t p_dereg_mr(void* comm, void* mhandle) {
  struct pwrap* c = unwrap_comm(comm, "dereg_mr");
  if (c == NULL) return ncclInvalidArgument;
  return PCALL(dereg_mr, c->p, mhandle);
}

static ncclResult_t p_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                            void* phandle, void** request) {
  struct pwrap* c = unwrap(send_comm, NET_KIND_SEND, "isend");
  void* r = NULL;
  *request = NULL;
  if (c == NULL) return ncclInvalidArgument;
  if (c->nreqs == NET_MAX_REQUESTS) return ncclSuccess; /* not now */
  if (plug.version == 8 && size > INT_MAX) {
    WARN("net plugin %s implements interface v8, whose sends carry at most 2^31-1 bytes; a send "
         "of %zu bytes was asked: use a plugin of interface v9 or later for larger messages",
         plug.t.v8->name, size);
    return ncclInvalidArgument;
  }
  if (plug.version == 8)
    NCCLCHECK(plug.t.v8->isend(c->p, data, (int)size, tag, mhandle, &r));
  else if (plug.version == 9)
    NCCLCHECK(plug.t.v9->isend(c->p, data, size, tag, mhandle, &r));
  else if (plug.version == 10)
    NCCLCHECK(plug.t.v10->isend(c->p, data, size, tag, mhandle, phandle, &r));
  else
    NCCLCHECK(plug.t.v11->isend(c->p, data, size, tag, mhandle, phandle, &r));
  return r == NULL ? ncclSuccess : wrap_req(c, r, 1, request);
}

static ncclResult_t p_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                            void** mhandles, void** phandles, void** request) {
  struct pwrap* c = unwrap(recv_comm, NET_KIND_RECV, "irecv");
  void* r = NULL;
  void* none[GROUP_MAX] = {NULL};
  int isizes[GROUP_MAX];
  *request = NULL;
  if (c == NULL) return ncclInvalidArgument;
  if (n < 1 || n > GROUP_MAX) {
    WARN("net plugin %s: irecv was asked to group %d buffers; Monel groups 1 to %d",
         plug.t.v8->name, n, GROUP_MAX);
    return ncclInvalidArgument;
  }
  if (c->nreqs == NET_MAX_REQUESTS) return ncclSuccess;
  if (plug.version == 8) {
    for (int i = 0; i < n; i++) isizes[i] = sizes[i] > INT_MAX ? INT_MAX : (int)sizes[i];
    NCCLCHECK(plug.t.v8->irecv(c->p, n, data, isizes, tags, mhandles, &r));
  } else if (plug.version == 9) {
    NCCLCHECK(plug.t.v9->irecv(c->p, n, data, sizes, tags, mhandles, &r));
  } else if (plug.version == 10) {
    NCCLCHECK(
        plug.t.v10->irecv(c->p, n, data, sizes, tags, mhandles, phandles ? phandles : none, &r));
  } else {
    NCCLCHECK(
        plug.t.v11->irecv(c->p, n, data, sizes, tags, mhandles, phandles ? phandles : none, &r));
  }
  return r == NULL ? ncclSuccess : wrap_req(c, r, n, request);
}

/* The plugin's iflush (int sizes in every version); none, or a plugin without one: nothing to
 * wait for. A flush beyond NET_MAX_REQUESTS is an error (net.h: the caller leaves room). */
static ncclResult_t p_iflush(void* recv_comm, int n, void** data, size_t* sizes, void** mhandles,
                             void** request) {
  struct pwrap* c = unwrap(recv_comm, NET_KIND_RECV, "iflush");
  int isizes[GROUP_MAX];
  void* r = NULL;
  *request = NULL;
  if (c == NULL) return ncclInvalidArgument;
  if (n < 1 || n > GROUP_MAX) {
    WARN("net plugin %s: iflush was asked for %d buffers; Monel groups 1 to %d", plug.t.v8->name, n,
         GROUP_MAX);
    return ncclInvalidArgument;
  }
  if (!PHAS(iflush)) return ncclSuccess;
  if (c->nreqs == NET_MAX_REQUESTS) {
    WARN("net plugin %s: iflush was called with %d requests in flight on its comm (net.h: a "
         "caller leaves room for the flush)",
         plug.t.v8->name, c->nreqs);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++) isizes[i] = sizes[i] > INT_MAX ? INT_MAX : (int)sizes[i];
  NCCLCHECK(PCALL(iflush, c->p, n, data, isizes, mhandles, &r));
  return r == NULL ? ncclSuccess : wrap_req(c, r, n, request);
}

static ncclResult_t p_test(void* request, int* done, size_t* sizes) {
  struct pwrap* r = unwrap(request, NET_KIND_REQUEST, "test");
  int isizes[GROUP_MAX] = {0};
  *done = 0;
  if (r == NULL) return ncclInvalidArgument;
  NCCLCHECK(PCALL(test, r->p, done, isizes));
  if (!*done) return ncclSuccess;
  if (sizes != NULL)
    for (int i = 0; i < r->n; i++) sizes[i] = isizes[i] < 0 ? 0 : (size_t)isizes[i];
  req_forget(r);
  unwrap_free(request, r);
  return ncclSuccess;
}

static ncclResult_t p_close(void* comm, enum net_kind kind) {
  struct pwrap* c = unwrap(comm, kind, "close");
  if (c == NULL) return ncclInvalidArgument;
  ncclResult_t res = kind == NET_KIND_SEND   ? PCALL(close_send, c->p)
                     : kind == NET_KIND_RECV ? PCALL(close_recv, c->p)
                                             : PCALL(close_listen, c->p);
  for (int i = 0; i < c->nreqs; i++)
    unwrap_free(c->reqs[i], net_handle_get(c->reqs[i], NET_KIND_REQUEST));
  unwrap_free(comm, c);
  return res;
}

static ncclResult_t p_close_send(void* c) {
  return p_close(c, NET_KIND_SEND);
}
static ncclResult_t p_close_recv(void* c) {
  return p_close(c, NET_KIND_RECV);
}
static ncclResult_t p_close_listen(void* c) {
  return p_close(c, NET_KIND_LISTEN);
}

/* No wait and wake: NCCL's plugin API has no call to block on a plugin's events nor one to wake
 * a thread blocked in it, so a progress thread polls a plugin (net_link_wait). */
static struct net plugin_net = {
    .devices = p_devices,
    .get_properties = p_get_properties,
    .listen = p_listen,
    .connect = p_connect,
    .accept = p_accept,
    .reg_mr = p_reg_mr,
    .dereg_mr = p_dereg_mr,
    .isend = p_isend,
    .irecv = p_irecv,
    .test = p_test,
    .close_send = p_close_send,
    .close_recv = p_close_recv,
    .close_listen = p_close_listen,
    .iflush = p_iflush,
};

/* ---- loading -------------------------------------------------------------------------------- */

static const char* const symbols[] = {"ncclNetPlugin_v11", "ncclNetPlugin_v10", "ncclNetPlugin_v9",
                                      "ncclNetPlugin_v8"};

/* dlopen as NCCL does: the name as given, then libnccl-net-NAME.so for a bare NAME. */
static void* open_lib(const char* name, char* used, size_t len) {
  snprintf(used, len, "%s", name);
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  size_t n = strlen(name);
  int full = strncmp(name, "lib", 3) == 0 && n > 3 && strcmp(name + n - 3, ".so") == 0;
  if (lib == NULL && strchr(name, '/') == NULL && !full) {
    snprintf(used, len, "libnccl-net-%s.so", name);
    lib = dlopen(used, RTLD_NOW | RTLD_LOCAL);
  }
  return lib;
}

/* Init, devices and properties; 1 if the plugin can carry Monel's host-memory FIFOs. */
static int plugin_start(const char* path) {
  const char* name = plug.t.v8->name;
  int ndev = 0;
  ncclResult_t res;
  if (plug.version == 8)
    res = plug.t.v8->init(plugin_lib_log);
  else if (plug.version == 9)
    res = plug.t.v9->init(plugin_lib_log);
  else if (plug.version == 10)
    res = plug.t.v10->init(plugin_lib_log, plugin_profile);
  else
    res = plug.t.v11->init(&plug.ctx, 0, &(struct netp_config){.traffic_class = -1}, plugin_lib_log,
                           plugin_profile);
  if (res != ncclSuccess) {
    INFO(LOG_INIT | LOG_NET, "NET/Plugin: %s (%s) failed to initialize (error %d); skipped", name,
         path, (int)res);
    return 0;
  }
  if ((res = p_devices(&ndev)) != ncclSuccess || ndev <= 0) {
    INFO(LOG_INIT | LOG_NET, "NET/Plugin: %s (%s) has no device (error %d); skipped", name, path,
         (int)res);
    return 0;
  }
  for (int d = 0; d < ndev; d++) {
    struct net_props p;
    if ((res = p_get_properties(d, &p)) != ncclSuccess) {
      INFO(LOG_INIT | LOG_NET, "NET/Plugin: %s: properties of device %d failed (error %d); skipped",
           name, d, (int)res);
      return 0;
    }
    INFO(LOG_INIT | LOG_NET,
         "NET/Plugin: %s device %d: %s, %d Mb/s, pointers 0x%x, %d buffers per "
         "receive",
         name, d, p.name, p.speed_mbps, p.ptr_support, p.max_recvs);
    if (d < 64 && (p.ptr_support & NET_PTR_CUDA)) plug.cuda_devs |= (uint64_t)1 << d;
    if (d == 0 && !(p.ptr_support & NET_PTR_HOST)) {
      INFO(LOG_INIT | LOG_NET,
           "NET/Plugin: %s cannot move host memory, which Monel's FIFOs are; "
           "skipped",
           name);
      return 0;
    }
  }
  INFO(LOG_INIT | LOG_NET, "NET/Plugin: loaded %s (%s, interface v%d, %d devices)", name, path,
       plug.version, ndev);
  return 1;
}

static char seen[512];        /* ", NAME (path)" of plugins skipped for another name */
static char loaded_name[512]; /* the name that opened the plugin in use */

const char* net_plugin_lib(void) {
  /* NCCL has loaded a net plugin it was asked for by the time its comm asks; Monel chooses the
   * network at the first connection across hosts, so it chooses now when one is asked for. */
  const char* spec = param_str(PARAM_NET_PLUGIN);
  if (!loaded_name[0] && spec[0] != '\0' && strcasecmp(spec, "none") != 0) {
    const struct net* n = NULL;
    int dev = 0;
    (void)net_get(&n, &dev); /* a failure is reported where the network is used */
  }
  return loaded_name[0] ? loaded_name : NULL;
}

/* Tries one candidate of NCCL_NET_PLUGIN; 1 when it is the network to use. */
static int plugin_try(const char* cand, const char* want, int asked) {
  char path[512];
  plug.lib = open_lib(cand, path, sizeof path);
  if (plug.lib == NULL) {
    if (asked)
      INFO(LOG_INIT | LOG_NET, "NET/Plugin: could not load %s: %s", cand, dlerror());
    else
      INFO(LOG_INIT | LOG_NET, "NET/Plugin: no plugin found (%s); using the built-in network",
           cand);
    return 0;
  }
  plug.version = 0;
  plug.cuda_devs = 0;
  for (int i = 0; i < 4 && plug.version == 0; i++) {
    const void* t = dlsym(plug.lib, symbols[i]);
    if (t != NULL) plug.version = 11 - i, plug.t.v8 = t;
  }
  if (plug.version == 0) {
    INFO(LOG_INIT | LOG_NET, "NET/Plugin: %s exports none of ncclNetPlugin_v11..v8; skipped", path);
  } else if (want[0] != '\0' && strcasecmp(plug.t.v8->name, want) != 0) {
    INFO(LOG_INIT | LOG_NET, "NET/Plugin: %s is network %s, not NCCL_NET=%s; skipped", path,
         plug.t.v8->name, want);
    size_t used = strlen(seen);
    snprintf(seen + used, sizeof seen - used, ", %.64s (%.200s)", plug.t.v8->name, path);
  } else if (plugin_start(path)) {
    plugin_net.name = plug.t.v8->name;
    snprintf(loaded_name, sizeof loaded_name, "%s", path);
    return 1;
  }
  dlclose(plug.lib);
  plug.lib = NULL;
  plug.version = 0;
  return 0;
}

static struct {
  ncclResult_t res;
  const struct net* net;
} chosen;

/* NCCL_NET=UCX without a plugin asked for: the built-in UCX network, or an error naming what
 * was looked for. */
static void choose_ucx(void) {
  if (net_ucx_open() == ncclSuccess) {
    chosen.net = &net_ucx;
    INFO(LOG_INIT | LOG_NET, "Using network UCX (NCCL_NET=UCX): transports %s",
         net_ucx_transports());
    return;
  }
  WARN("NCCL_NET=UCX asked for the UCX network, but %s", net_ucx_why());
  chosen.res = ncclSystemError;
}

/* No plugin and no NCCL_NET: UCX when it reaches an RDMA transport, else Socket. UCX is only
 * loaded when the kernel lists an RDMA device, which UCX's rc, dc and ud transports need. */
static void choose_default(void) {
  DIR* d = opendir("/sys/class/infiniband");
  int rdma_dev = 0;
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;) rdma_dev |= e->d_name[0] != '.';
  if (d != NULL) closedir(d);
  if (!rdma_dev && !param_is_set(PARAM_UCX_LIB)) {
    INFO(LOG_INIT | LOG_NET, "NET/UCX: not used: no RDMA device (/sys/class/infiniband is empty)");
  } else if (net_ucx_open() != ncclSuccess) {
    INFO(LOG_INIT | LOG_NET, "NET/UCX: not used: %s", net_ucx_why());
  } else if (!net_ucx_rdma()) {
    INFO(LOG_INIT | LOG_NET, "NET/UCX: not used: UCX reports no RDMA transport (only %s)",
         net_ucx_transports());
  } else {
    chosen.net = &net_ucx;
    INFO(LOG_INIT | LOG_NET, "Using network UCX: transports %s", net_ucx_transports());
    return;
  }
  INFO(LOG_INIT | LOG_NET, "Using network Socket");
}

static void choose(void) {
  const char* want = param_str(PARAM_NET);
  const char* spec = param_str(PARAM_NET_PLUGIN);
  int asked = param_is_set(PARAM_NET_PLUGIN) && spec[0] != '\0';
  chosen.net = &net_tcp;
  chosen.res = ncclSuccess;
  if (strcasecmp(want, "Socket") == 0) {
    INFO(LOG_INIT | LOG_NET, "NET: NCCL_NET=Socket: using the built-in network, no plugin");
    return;
  }
  if (strcasecmp(want, "UCX") == 0 && !asked) {
    choose_ucx();
    return;
  }
  char list[1024];
  snprintf(list, sizeof list, "%s", asked ? spec : "libnccl-net.so");
  if (strcasecmp(list, "none") != 0) {
    char* save = NULL;
    for (char* c = strtok_r(list, ",", &save); c != NULL; c = strtok_r(NULL, ",", &save)) {
      if (*c != '\0' && plugin_try(c, want, asked)) {
        chosen.net = &plugin_net;
        INFO(LOG_INIT | LOG_NET, "Using network %s", plugin_net.name);
        return;
      }
    }
  }
  if (strcasecmp(want, "UCX") == 0) { /* no plugin named UCX: the built-in one */
    choose_ucx();
    return;
  }
  if (want[0] != '\0') {
    WARN("NCCL_NET=%s names no available network (there are: Socket, UCX%s): set NCCL_NET to one "
         "of them, or NCCL_NET_PLUGIN to the plugin that provides %s",
         want, seen, want);
    chosen.res = ncclInvalidUsage;
    return;
  }
  choose_default();
}

ncclResult_t net_get(const struct net** out, int* dev) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, choose);
  *out = chosen.res == ncclSuccess ? chosen.net : NULL;
  *dev = 0;
  return chosen.res;
}

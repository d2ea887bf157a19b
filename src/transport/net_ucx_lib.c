/* SPDX-License-Identifier: BSD-3-Clause */
/* Loading UCX at run time for the UCX network (net_ucx.c): dlopen of MONEL_UCX_LIB (default
 * libucp.so.0), the functions by dlsym, a version check (UCX_MIN_MAJOR.UCX_MIN_MINOR or later),
 * one context (tagged messages) and one worker per process, and what UCX found: its transports,
 * whether one of them is RDMA (rc, dc, ud: InfiniBand or RoCE) and whether it registers CUDA
 * memory. UCX reads its own variables (UCX_TLS, UCX_NET_DEVICES, ...); NCCL_IB_HCA becomes
 * UCX_NET_DEVICES when that is not set. Loading UCX installs its handlers for crash signals;
 * the process's own handlers are put back, so loading UCX changes nothing about crashes. */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "util/param.h"
#include "transport/net_ucx.h"

static struct {
  pthread_once_t once;
  ncclResult_t res;
  char why[768];
  char tls[512];
} st = {PTHREAD_ONCE_INIT, ncclSystemError, "", ""};

struct ucx_state ucx = {.lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1};

/* A function of UCX's to look up, and where its address goes. */
struct sym {
  void** slot;
  const char* name;
};
#define SYM(field, name)                                                                           \
  { (void**)&ucx.f.field, name }
static const struct sym syms[] = {
    SYM(get_version, "ucp_get_version"),
    SYM(config_read, "ucp_config_read"),
    SYM(config_release, "ucp_config_release"),
    SYM(config_modify, "ucp_config_modify"),
    SYM(init_version, "ucp_init_version"),
    SYM(cleanup, "ucp_cleanup"),
    SYM(context_query, "ucp_context_query"),
    SYM(context_print_info, "ucp_context_print_info"),
    SYM(worker_create, "ucp_worker_create"),
    SYM(worker_progress, "ucp_worker_progress"),
    SYM(listener_create, "ucp_listener_create"),
    SYM(listener_destroy, "ucp_listener_destroy"),
    SYM(listener_query, "ucp_listener_query"),
    SYM(listener_reject, "ucp_listener_reject"),
    SYM(ep_create, "ucp_ep_create"),
    SYM(ep_close_nbx, "ucp_ep_close_nbx"),
    SYM(ep_print_info, "ucp_ep_print_info"),
    SYM(tag_send_nbx, "ucp_tag_send_nbx"),
    SYM(tag_recv_nbx, "ucp_tag_recv_nbx"),
    SYM(tag_probe_nb, "ucp_tag_probe_nb"),
    SYM(request_check_status, "ucp_request_check_status"),
    SYM(tag_recv_request_test, "ucp_tag_recv_request_test"),
    SYM(request_cancel, "ucp_request_cancel"),
    SYM(request_free, "ucp_request_free"),
    SYM(mem_map, "ucp_mem_map"),
    SYM(mem_unmap, "ucp_mem_unmap"),
    SYM(status_string, "ucs_status_string"),
    SYM(worker_get_address, "ucp_worker_get_address"),
    SYM(worker_release_address, "ucp_worker_release_address"),
    SYM(rkey_pack, "ucp_rkey_pack"),
    SYM(rkey_buffer_release, "ucp_rkey_buffer_release"),
    SYM(ep_rkey_unpack, "ucp_ep_rkey_unpack"),
    SYM(rkey_destroy, "ucp_rkey_destroy"),
    SYM(get_nbx, "ucp_get_nbx"),
};

/* The wakeup functions (net_ucx_wait, net_ucx_wake): optional (wakeup_start). */
static const struct sym wakeup_syms[] = {
    SYM(worker_get_efd, "ucp_worker_get_efd"),
    SYM(worker_arm, "ucp_worker_arm"),
    SYM(worker_signal, "ucp_worker_signal"),
};

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NSIG_SAVED (int)(sizeof crash_signals / sizeof *crash_signals)

/* "mlx5_0:1,=mlx5_1" -> "mlx5_0:1,mlx5_1:1" (UCX names a port; NCCL may leave it out). */
static int hca_to_ucx(const char* hca, char* out, size_t len) {
  char list[512];
  size_t o = 0;
  snprintf(list, sizeof list, "%s", hca[0] == '=' ? hca + 1 : hca);
  out[0] = '\0';
  char* save = NULL;
  for (char* d = strtok_r(list, ",", &save); d != NULL; d = strtok_r(NULL, ",", &save)) {
    if (*d == '\0') continue;
    o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%s%s", o ? "," : "", d,
                          strchr(d, ':') ? "" : ":1");
  }
  return o > 0 && o < len;
}

/* UCX_NET_DEVICES from NCCL_IB_HCA when the user set only the latter. */
static void map_ib_hca(ucp_config_t* cfg) {
  const char* hca = param_str(PARAM_IB_HCA);
  char devs[512];
  if (hca[0] == '\0') return;
  if (param_is_set(PARAM_UCX_NET_DEVICES)) {
    INFO(LOG_INIT | LOG_NET, "NET/UCX: UCX_NET_DEVICES=%s is set, so NCCL_IB_HCA=%s is not used",
         param_str(PARAM_UCX_NET_DEVICES), hca);
  } else if (hca[0] == '^') {
    INFO(LOG_INIT | LOG_NET,
         "NET/UCX: NCCL_IB_HCA=%s excludes devices, which UCX_NET_DEVICES cannot express; "
         "ignored (set UCX_NET_DEVICES to the devices to use)",
         hca);
  } else if (hca_to_ucx(hca, devs, sizeof devs) &&
             ucx.f.config_modify(cfg, "NET_DEVICES", devs) == UCS_OK) {
    INFO(LOG_INIT | LOG_NET, "NET/UCX: NCCL_IB_HCA=%s: UCX_NET_DEVICES=%s", hca, devs);
  }
}

/* The "tl/device" of each resource ucp_context_print_info lists; rdma when one is rc, dc or
 * ud (verbs or mlx5 accelerated: InfiniBand and RoCE). */
static void list_transports(void) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (f == NULL) return;
  ucx.f.context_print_info(ucx.ctx, f);
  fclose(f);
  size_t o = 0;
  for (char* line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    const char* r = strstr(line, "resource");
    const char* tl = strstr(line, "-- ");
    if (r == NULL || tl == NULL) continue;
    tl += 3;
    if (strncmp(tl, "rc", 2) == 0 || strncmp(tl, "dc", 2) == 0 || strncmp(tl, "ud", 2) == 0)
      ucx.rdma = 1;
    if (o < sizeof st.tls)
      o += (size_t)snprintf(st.tls + o, sizeof st.tls - o, "%s%s", o ? " " : "", tl);
  }
  free(text);
}

static int load(void) {
  const char* name = param_str(PARAM_UCX_LIB);
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(st.why, sizeof st.why,
             "UCX was looked for as %s (MONEL_UCX_LIB) and could not be loaded (%s); install "
             "UCX (Debian: libucx0) or point MONEL_UCX_LIB at libucp.so.0",
             name, dlerror());
    return 0;
  }
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    *syms[i].slot = dlsym(lib, syms[i].name);
    if (*syms[i].slot == NULL) {
      snprintf(st.why, sizeof st.why,
               "%s (MONEL_UCX_LIB) has no %s: it is not UCX %d.%d or later; install a newer "
               "UCX or point MONEL_UCX_LIB at one",
               name, syms[i].name, UCX_MIN_MAJOR, UCX_MIN_MINOR);
      return 0;
    }
  }
  for (size_t i = 0; i < sizeof wakeup_syms / sizeof *wakeup_syms; i++)
    *wakeup_syms[i].slot = dlsym(lib, wakeup_syms[i].name);
  unsigned maj = 0, min = 0, rel = 0;
  ucx.f.get_version(&maj, &min, &rel);
  if (maj < UCX_MIN_MAJOR || (maj == UCX_MIN_MAJOR && min < UCX_MIN_MINOR)) {
    snprintf(st.why, sizeof st.why,
             "%s (MONEL_UCX_LIB) is UCX %u.%u.%u; Monel needs %d.%d or later: install a newer "
             "UCX or point MONEL_UCX_LIB at one",
             name, maj, min, rel, UCX_MIN_MAJOR, UCX_MIN_MINOR);
    return 0;
  }
  snprintf(st.tls, sizeof st.tls, "%u.%u.%u", maj, min, rel);
  return 1;
}

/* The worker's wakeup descriptor, when UCX has the functions and gives one; an INFO line says
 * how the progress thread looks for work otherwise. */
static void wakeup_start(void) {
  const char* lib = param_str(PARAM_UCX_LIB);
  if (ucx.f.worker_get_efd == NULL || ucx.f.worker_arm == NULL) {
    INFO(LOG_INIT | LOG_NET,
         "NET/UCX: %s has no ucp_worker_get_efd or ucp_worker_arm: the "
         "progress thread polls UCX",
         lib);
    return;
  }
  ucs_status_t s = ucx.f.worker_get_efd(ucx.worker, &ucx.efd);
  if (s != UCS_OK) {
    ucx.efd = -1;
    INFO(LOG_INIT | LOG_NET,
         "NET/UCX: UCX gives no wakeup descriptor (ucp_worker_get_efd: %s): "
         "the progress thread polls UCX",
         ucx.f.status_string(s));
  } else if (ucx.f.worker_signal == NULL) {
    INFO(LOG_INIT | LOG_NET,
         "NET/UCX: %s has no ucp_worker_signal: the progress thread cannot "
         "be woken and looks for work every 1 ms",
         lib);
  }
}

static int start(void) {
  ucp_config_t* cfg = NULL;
  ucs_status_t s = ucx.f.config_read(NULL, NULL, &cfg);
  if (s != UCS_OK) {
    snprintf(st.why, sizeof st.why, "UCX could not read its configuration (UCX_* variables): %s",
             ucx.f.status_string(s));
    return 0;
  }
  map_ib_hca(cfg);
  ucp_params_t p;
  memset(&p, 0, sizeof p);
  p.field_mask = UCP_PARAM_FIELD_FEATURES;
  p.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  s = ucx.f.init_version(UCP_API_MAJOR, UCP_API_MINOR, &p, cfg, &ucx.ctx);
  ucx.f.config_release(cfg);
  if (s != UCS_OK) {
    snprintf(st.why, sizeof st.why,
             "UCX could not start (ucp_init: %s); check UCX_TLS and "
             "UCX_NET_DEVICES",
             ucx.f.status_string(s));
    return 0;
  }
  ucp_context_attr_t a;
  memset(&a, 0, sizeof a);
  a.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucx.f.context_query(ucx.ctx, &a) == UCS_OK)
    ucx.cuda = (a.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  s = ucx.f.worker_create(ucx.ctx, &wp, &ucx.worker);
  if (s != UCS_OK) {
    snprintf(st.why, sizeof st.why, "UCX could not make a worker: %s", ucx.f.status_string(s));
    ucx.f.cleanup(ucx.ctx);
    return 0;
  }
  wakeup_start();
  char version[32];
  snprintf(version, sizeof version, "%.31s", st.tls);
  st.tls[0] = '\0';
  list_transports();
  INFO(LOG_INIT | LOG_NET, "NET/UCX: UCX %s (%s): transports %s; RDMA %s; CUDA memory %s", version,
       param_str(PARAM_UCX_LIB), st.tls, ucx.rdma ? "yes" : "no", ucx.cuda ? "yes" : "no");
  return 1;
}

static void open_once(void) {
  struct sigaction saved[NSIG_SAVED];
  for (int i = 0; i < NSIG_SAVED; i++) sigaction(crash_signals[i], NULL, &saved[i]);
  if (load() && start()) st.res = ncclSuccess;
  for (int i = 0; i < NSIG_SAVED; i++) sigaction(crash_signals[i], &saved[i], NULL);
}

int net_ucx_rdma(void) {
  return ucx.rdma;
}

static int kicked; /* atomic: net_ucx_wake was called since the last wait began to sleep */

void net_ucx_wait(int ms) {
  if (st.res != ncclSuccess || ucx.efd < 0) { /* nothing to sleep on: poll UCX often */
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
    return;
  }
  if (ms < 0 && ucx.f.worker_signal == NULL) ms = 1; /* nothing could end the wait early */
  /* Events UCX already has are handled by progress, and the descriptor is armed only once none
   * is left (UCS_ERR_BUSY: some came in between). If progress moved anything, a request may
   * have completed here: return, so that the caller's pass sees it. */
  unsigned moved = 0, k;
  pthread_mutex_lock(&ucx.lock);
  while ((k = ucx.f.worker_progress(ucx.worker)) != 0) moved += k;
  ucs_status_t s = moved ? UCS_ERR_BUSY : ucx.f.worker_arm(ucx.worker);
  pthread_mutex_unlock(&ucx.lock);
  /* A wake after this point signals the armed descriptor; one before it left `kicked` set. */
  if (s == UCS_OK && !__atomic_exchange_n(&kicked, 0, __ATOMIC_SEQ_CST)) {
    struct pollfd p = {.fd = ucx.efd, .events = POLLIN};
    (void)poll(&p, 1, ms);
  }
  __atomic_store_n(&kicked, 0, __ATOMIC_SEQ_CST);
}

/* ucp_worker_signal may be called from any thread without the worker's lock (UCX's API). */
void net_ucx_wake(void) {
  if (st.res != ncclSuccess || ucx.efd < 0 || ucx.f.worker_signal == NULL) return;
  __atomic_store_n(&kicked, 1, __ATOMIC_SEQ_CST);
  (void)ucx.f.worker_signal(ucx.worker);
}

ncclResult_t net_ucx_open(void) {
  pthread_once(&st.once, open_once);
  return st.res;
}

const char* net_ucx_why(void) {
  return st.why;
}

const char* net_ucx_transports(void) {
  return st.tls;
}

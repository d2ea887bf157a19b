/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPUs NVML sees, with their NVLinks (detect.h). NVML is loaded at run time, so that the
 * library loads where there is no driver; its few types are declared here as NVML documents
 * them. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "topo/detect.h"
#include "topo/topo.h"
#include "util/check.h"

typedef void* nvml_device;
struct nvml_pci_info { /* nvmlPciInfo_t (v3) */
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
enum { NVML_OK = 0, NVML_CAP_P2P_SUPPORTED = 0, NVML_LINKS_MAX = 18 };

static struct {
  int (*init)(void);
  int (*count)(unsigned*);
  int (*by_index)(unsigned, nvml_device*);
  int (*pci_info)(nvml_device, struct nvml_pci_info*);
  int (*capability)(nvml_device, int*, int*);
  int (*link_state)(nvml_device, unsigned, int*);
  int (*link_cap)(nvml_device, unsigned, int, unsigned*);
  int (*link_remote)(nvml_device, unsigned, struct nvml_pci_info*);
  int ok;
} nvml;

static void load(void) {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    INFO(LOG_INIT | LOG_GRAPH, "topology: NVML not loaded (%s): no NVLink facts", dlerror());
    return;
  }
#define SYM(field, name) *(void**)&nvml.field = dlsym(h, name)
  SYM(init, "nvmlInit_v2");
  SYM(count, "nvmlDeviceGetCount_v2");
  SYM(by_index, "nvmlDeviceGetHandleByIndex_v2");
  SYM(pci_info, "nvmlDeviceGetPciInfo_v3");
  SYM(capability, "nvmlDeviceGetCudaComputeCapability");
  SYM(link_state, "nvmlDeviceGetNvLinkState");
  SYM(link_cap, "nvmlDeviceGetNvLinkCapability");
  SYM(link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
#undef SYM
  if (!nvml.init || !nvml.count || !nvml.by_index || !nvml.pci_info || !nvml.capability) {
    INFO(LOG_INIT | LOG_GRAPH, "topology: NVML lacks the calls Monel uses: no NVML facts");
    return;
  }
  int r = nvml.init();
  if (r != NVML_OK) {
    INFO(LOG_INIT | LOG_GRAPH, "topology: nvmlInit failed (%d): no NVML facts", r);
    return;
  }
  nvml.ok = 1;
}

/* The GPU's active NVLinks, counted per far end. */
static ncclResult_t links(nvml_device d, struct topo_gpu_desc* g) {
  if (!nvml.link_state || !nvml.link_remote) return ncclSuccess;
  for (unsigned l = 0; l < NVML_LINKS_MAX; l++) {
    int active = 0;
    unsigned p2p = 1;
    struct nvml_pci_info far;
    char b[16];
    if (nvml.link_state(d, l, &active) != NVML_OK || !active) continue;
    if (nvml.link_cap && nvml.link_cap(d, l, NVML_CAP_P2P_SUPPORTED, &p2p) == NVML_OK && !p2p)
      continue;
    memset(&far, 0, sizeof far);
    if (nvml.link_remote(d, l, &far) != NVML_OK || !topo_busid_norm(far.bus_id, b)) b[0] = '\0';
    int k = 0;
    while (k < g->nlinks && strcmp(g->links[k].target, b) != 0) k++;
    if (k == g->nlinks) {
      struct topo_nvlink_desc* n = realloc(g->links, sizeof *n * (size_t)(k + 1));
      if (n == NULL) return ncclSystemError;
      g->links = n;
      snprintf(n[k].target, sizeof n[k].target, "%s", b);
      n[k].count = 0;
      g->nlinks++;
    }
    g->links[k].count++;
  }
  return ncclSuccess;
}

ncclResult_t topo_nvml_gpus(struct topo_gpu_desc** out, int* n) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  unsigned count = 0;
  *out = NULL;
  *n = 0;
  pthread_once(&once, load);
  if (!nvml.ok || nvml.count(&count) != NVML_OK || count == 0) return ncclSuccess;
  struct topo_gpu_desc* g = calloc(count, sizeof *g);
  if (g == NULL) return ncclSystemError;
  int k = 0;
  for (unsigned i = 0; i < count; i++) {
    nvml_device d = NULL;
    struct nvml_pci_info pi;
    int major = 0, minor = 0;
    memset(&pi, 0, sizeof pi);
    if (nvml.by_index(i, &d) != NVML_OK || nvml.pci_info(d, &pi) != NVML_OK ||
        !topo_busid_norm(pi.bus_id, g[k].busid))
      continue;
    if (nvml.capability(d, &major, &minor) == NVML_OK) g[k].sm = major * 10 + minor;
    g[k].dev = (int)i;
    g[k].rank = -1;
    if (links(d, &g[k]) != ncclSuccess) {
      topo_gpu_descs_free(g, k + 1);
      return ncclSystemError;
    }
    k++;
  }
  *out = g;
  *n = k;
  return ncclSuccess;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* This host's topology as the library uses it (node_topo.h): built once per process from the
 * topology file, sysfs, NVML and the devices of the network this process uses; rebuilt when an
 * engine names a GPU that NVML did not list (no NVML, or a GPU it cannot see). */
#include "core/node_topo.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "topo/detect.h"
#include "transport/net.h"
#include "util/check.h"
#include "util/param.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct topo_system* machine;
static ncclResult_t machine_res = ncclSuccess;
static struct topo_gpu_desc* extra; /* GPUs named by engines that NVML did not list */
static int nextra;

static ncclResult_t net_descs(struct topo_nic_desc** out, int* n) {
  const struct net* net = NULL;
  int dev0 = 0, ndev = 0;
  *out = NULL;
  *n = 0;
  if (net_get(&net, &dev0) != ncclSuccess || net == NULL) return ncclSuccess;
  if (net->devices(&ndev) != ncclSuccess || ndev <= 0) return ncclSuccess;
  struct topo_nic_desc* d = calloc((size_t)ndev, sizeof *d);
  if (d == NULL) return ncclSystemError;
  int k = 0;
  for (int i = 0; i < ndev; i++) {
    struct net_props p;
    memset(&p, 0, sizeof p);
    if (net->get_properties(i, &p) != ncclSuccess) continue;
    snprintf(d[k].name, sizeof d[k].name, "%s", p.name);
    snprintf(d[k].pci_path, sizeof d[k].pci_path, "%s", p.pci_path);
    d[k].dev = i;
    d[k].speed_mbps = p.speed_mbps;
    d[k].guid = p.guid;
    d[k].port = p.port;
    d[k].gdr = (p.ptr_support & NET_PTR_CUDA) != 0;
    d[k].latency_us = (int)p.latency_us;
    d[k].max_comms = p.max_comms;
    d[k].rail = -1;
    k++;
  }
  *out = d;
  *n = k;
  return ncclSuccess;
}

/* A file with no GPU or NIC of its own given: the file alone, its partial leaves completed (a
 * GPU-class <pci> without <gpu>, a NIC-class one without <nic>), nothing trimmed. */
static ncclResult_t complete_file(struct topo_xml* x, int* gpus, int* nets) {
  const char* cls = strcmp(x->name, "pci") == 0 ? topo_xml_get(x, "class") : NULL;
  char v[16];
  if (cls && strncmp(cls, "0x03", 4) == 0 && topo_xml_child(x, "gpu") == NULL) {
    struct topo_xml* g = topo_xml_new("gpu");
    if (g == NULL) return ncclSystemError;
    NCCLCHECK(topo_xml_add(x, g, 0));
    snprintf(v, sizeof v, "%d", *gpus);
    NCCLCHECK(topo_xml_set(g, "dev", v));
    NCCLCHECK(topo_xml_set(g, "sm", "0"));
  }
  if (cls && strncmp(cls, "0x02", 4) == 0 && topo_xml_child(x, "nic") == NULL) {
    struct topo_xml* nic = topo_xml_new("nic");
    struct topo_xml* net = topo_xml_new("net");
    if (nic == NULL || net == NULL || topo_xml_add(x, nic, 0) != ncclSuccess) {
      topo_xml_free(nic);
      topo_xml_free(net);
      return ncclSystemError;
    }
    NCCLCHECK(topo_xml_add(nic, net, 0));
    NCCLCHECK(topo_xml_set(net, "name", topo_xml_get(x, "busid") ? topo_xml_get(x, "busid") : "?"));
  }
  if (strcmp(x->name, "gpu") == 0) (*gpus)++;
  if (strcmp(x->name, "net") == 0) {
    snprintf(v, sizeof v, "%d", *nets);
    NCCLCHECK(topo_xml_fill(x, "dev", v));
    (*nets)++;
  }
  for (int i = 0; i < x->nkids; i++) NCCLCHECK(complete_file(x->kids[i], gpus, nets));
  return ncclSuccess;
}

static ncclResult_t build(struct topo_system** out) {
  ncclResult_t res = ncclSuccess;
  struct topo_gpu_desc* gpus = NULL;
  struct topo_nic_desc* nics = NULL;
  struct topo_xml* root = NULL;
  struct topo_opts o;
  int ngpus = 0, nnics = 0;
  const char* sysfs = param_str(PARAM_TOPO_SYSFS);
  *out = NULL;
  NCCLCHECK(topo_opts_from_params(&o));
  NCCLCHECKGOTO(topo_nvml_gpus(&gpus, &ngpus), res, out);
  if (nextra > 0) {
    struct topo_gpu_desc* g = realloc(gpus, sizeof *g * (size_t)(ngpus + nextra));
    if (g == NULL) {
      res = ncclSystemError;
      goto out;
    }
    gpus = g;
    for (int i = 0; i < nextra; i++) {
      gpus[ngpus] = extra[i];
      gpus[ngpus++].links = NULL;
    }
  }
  /* A GPU's own side of GPUDirect RDMA is taken as given (peer memory or DMA-BUF; a file can say
   * gdr="0"): the path to the NIC and the NIC decide. */
  for (int i = 0; i < ngpus; i++) gpus[i].gdr = 1;
  const char* file = topo_file_path();
  if (ngpus == 0 && file != NULL) {
    int ng = 0, nn = 0;
    NCCLCHECKGOTO(topo_xml_load(file, &root), res, out);
    NCCLCHECKGOTO(complete_file(root, &ng, &nn), res, out);
  } else {
    NCCLCHECKGOTO(net_descs(&nics, &nnics), res, out);
    struct topo_detect d = {.gpus = gpus,
                            .ngpus = ngpus,
                            .nics = nics,
                            .nnics = nnics,
                            .file = file,
                            .sysfs = sysfs,
                            .trim = 1};
    NCCLCHECKGOTO(topo_detect_xml(&d, &root), res, out);
  }
  res = topo_system_make(root, &o, out);
  root = NULL;
out:
  topo_xml_free(root);
  topo_gpu_descs_free(gpus, ngpus);
  free(nics);
  return res;
}

ncclResult_t node_topo_get(const struct topo_system** out) {
  pthread_mutex_lock(&lock);
  if (machine == NULL && machine_res == ncclSuccess) machine_res = build(&machine);
  *out = machine;
  ncclResult_t res = machine_res;
  pthread_mutex_unlock(&lock);
  return res;
}

ncclResult_t node_topo_gpu(const char* busid, int cuda_dev, int* g) {
  const struct topo_system* s = NULL;
  *g = -1;
  NCCLCHECK(node_topo_get(&s));
  if ((*g = topo_gpu_find(s, busid)) >= 0) return ncclSuccess;
  pthread_mutex_lock(&lock);
  ncclResult_t res = ncclSuccess;
  struct topo_gpu_desc* e = realloc(extra, sizeof *e * (size_t)(nextra + 1));
  if (e == NULL) {
    res = ncclSystemError;
  } else {
    extra = e;
    memset(&e[nextra], 0, sizeof *e);
    if (!topo_busid_norm(busid, e[nextra].busid)) {
      WARN("GPU bus id '%s' is not a PCI address", busid);
      res = ncclInternalError;
    } else {
      e[nextra].dev = cuda_dev;
      e[nextra].rank = -1;
      nextra++;
      struct topo_system* fresh = NULL;
      res = build(&fresh);
      if (res == ncclSuccess) {
        /* The old system stays allocated: comms made before may still read it. */
        machine = fresh;
        *g = topo_gpu_find(machine, busid);
      }
    }
  }
  pthread_mutex_unlock(&lock);
  return res;
}

ncclResult_t node_topo_path_gdr(const char* busid, int cuda_dev, int dev, int* ok, int* type) {
  const struct topo_system* s = NULL;
  int g = -1;
  *ok = 1;
  *type = -1;
  NCCLCHECK(node_topo_gpu(busid, cuda_dev, &g));
  NCCLCHECK(node_topo_get(&s));
  for (int n = 0; g >= 0 && n < s->nnets; n++) {
    if (s->nets[n].dev != dev) continue;
    *ok = s->gpu_net[g * s->nnets + n].gdr;
    *type = s->gpu_net[g * s->nnets + n].type;
  }
  return ncclSuccess;
}

ncclResult_t node_topo_nvlink_gbps(const char* busid, int cuda_dev, double* gbps) {
  const struct topo_system* s = NULL;
  int g = -1;
  *gbps = 0.0;
  NCCLCHECK(node_topo_gpu(busid, cuda_dev, &g));
  NCCLCHECK(node_topo_get(&s));
  *gbps = topo_gpu_nvlink_gbps(s, g);
  return ncclSuccess;
}

ncclResult_t node_topo_net_devs(const char* busid, int cuda_dev, int** devs, int* n) {
  const struct topo_system* s = NULL;
  int g = -1;
  *devs = NULL;
  *n = 0;
  NCCLCHECK(node_topo_gpu(busid, cuda_dev, &g));
  NCCLCHECK(node_topo_get(&s));
  int* d = calloc((size_t)s->nnets + 1, sizeof *d);
  if (d == NULL) return ncclSystemError;
  int k = g >= 0 ? topo_gpu_nets(s, g, d, s->nnets) : 0;
  for (int i = 0; i < k; i++) d[i] = s->nets[d[i]].dev;
  *devs = d;
  *n = k > 0 ? k : 1; /* d[0] is 0 when there is nothing to choose from */
  return ncclSuccess;
}

ncclResult_t node_topo_cpu_net_dev(int local_index, int* dev) {
  const struct topo_system* s = NULL;
  cpu_set_t set;
  int cpu = -1;
  *dev = 0;
  NCCLCHECK(node_topo_get(&s));
  if (s->nnets <= 1) return ncclSuccess;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
      if (CPU_ISSET(c, &set)) cpu = c;
  int* nets = malloc(sizeof *nets * (size_t)s->nnets);
  if (nets == NULL) return ncclSystemError;
  int n = topo_cpu_nets(s, cpu >= 0 ? topo_cpu_numa(s, cpu) : -1, nets, s->nnets);
  if (n > 0) *dev = s->nets[nets[local_index % n]].dev;
  free(nets);
  return ncclSuccess;
}

ncclResult_t node_topo_lines(char* buf, size_t len, int (*cuda_dev_of)(const char* busid)) {
  const struct topo_system* s = NULL;
  size_t at = 0;
  if (len) buf[0] = '\0';
  NCCLCHECK(node_topo_get(&s));
  for (int g = 0; g < s->ngpus; g++) {
    const struct topo_gpu* u = &s->gpus[g];
    int* nets = malloc(sizeof *nets * (size_t)(s->nnets + 1));
    if (nets == NULL) return ncclSystemError;
    int n = topo_gpu_nets(s, g, nets, s->nnets);
    int cd = cuda_dev_of ? cuda_dev_of(u->busid) : -1;
    for (int i = 0; i < n && at < len; i++) {
      const struct topo_net* v = &s->nets[nets[i]];
      const struct topo_path* p = &s->gpu_net[g * s->nnets + nets[i]];
      int w = snprintf(buf + at, len - at, "GPU %d %s -> NIC %s %s %s %g\n", cd >= 0 ? cd : u->dev,
                       u->busid, v->name, v->busid[0] ? v->busid : "-", topo_path_name(p->type),
                       (double)v->speed_mbps / 1000.0);
      at += w > 0 ? (size_t)w : 0;
    }
    free(nets);
  }
  return ncclSuccess;
}

void node_topo_dump(int rank) {
  const char* path = param_str(PARAM_TOPO_DUMP_FILE);
  const struct topo_system* s = NULL;
  if (path[0] == '\0' || rank != (int)param_int(PARAM_TOPO_DUMP_FILE_RANK)) return;
  if (node_topo_get(&s) != ncclSuccess || s == NULL) return;
  if (topo_xml_save(s->root, path) == ncclSuccess)
    INFO(LOG_INIT | LOG_GRAPH, "topology written to %s", path);
}

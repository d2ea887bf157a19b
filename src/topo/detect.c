/* SPDX-License-Identifier: BSD-3-Clause */
/* This host's topology tree from a file, sysfs and the devices found (detect.h). */
#include "topo/detect.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "topo/topo.h"
#include "util/check.h"
#include "util/param.h"

#define VIRTUAL_TOPOLOGY "/var/run/nvidia-topologyd/virtualTopology.xml"

const char* topo_file_path(void) {
  const char* f = param_str(PARAM_TOPO_FILE);
  if (f[0] != '\0') return f;
  return access(VIRTUAL_TOPOLOGY, R_OK) == 0 ? VIRTUAL_TOPOLOGY : NULL;
}

/* The first line of file dir/name into buf ("" when it cannot be read). */
static void read_line(const char* dir, const char* name, char* buf, size_t len) {
  char path[PATH_MAX];
  buf[0] = '\0';
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  if (fgets(buf, (int)len, f) == NULL) buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
}

static int is_bdf(const char* s, size_t n) {
  char tmp[32], b[16];
  if (n == 0 || n >= sizeof tmp) return 0;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  return topo_busid_norm(tmp, b);
}

/* The last component of path (its start and length). */
static const char* last_comp(const char* path, size_t end, size_t* n) {
  size_t a = end;
  while (a > 0 && path[a - 1] != '/') a--;
  *n = end - a;
  return path + a;
}

static struct topo_xml* find_pci(struct topo_xml* x, const char* busid) {
  char b[16];
  if (strcmp(x->name, "pci") == 0 && topo_busid_norm(topo_xml_get(x, "busid"), b) &&
      strcmp(b, busid) == 0)
    return x;
  for (int i = 0; i < x->nkids; i++) {
    struct topo_xml* f = find_pci(x->kids[i], busid);
    if (f != NULL) return f;
  }
  return NULL;
}

static void mark(struct topo_xml* x) {
  for (; x != NULL; x = x->parent) x->keep = 1;
}

static ncclResult_t set_int(struct topo_xml* x, const char* name, long long v, int fill) {
  char s[32];
  snprintf(s, sizeof s, "%lld", v);
  return fill ? topo_xml_fill(x, name, s) : topo_xml_set(x, name, s);
}

static ncclResult_t cpu_new(struct topo_xml* root, const char* sysfs, int numa,
                            struct topo_xml** out) {
  char dir[PATH_MAX], map[1024] = "";
  struct topo_xml* c = topo_xml_new("cpu");
  *out = c;
  if (c == NULL) return ncclSystemError;
  NCCLCHECK(set_int(c, "numaid", numa, 0));
  snprintf(dir, sizeof dir, "%s/devices/system/node/node%d", sysfs, numa);
  if (numa >= 0) read_line(dir, "cpumap", map, sizeof map);
  if (map[0]) NCCLCHECK(topo_xml_set(c, "affinity", map));
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, cc = 0, d = 0;
  char vendor[13] = "";
  if (__get_cpuid(0, &a, &b, &cc, &d)) {
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &cc, 4);
  }
  NCCLCHECK(topo_xml_set(c, "arch", "x86_64"));
  if (vendor[0]) NCCLCHECK(topo_xml_set(c, "vendor", vendor));
  if (__get_cpuid(1, &a, &b, &cc, &d)) {
    unsigned fam = a >> 8 & 0xf, model = a >> 4 & 0xf;
    if (fam == 6 || fam == 0xf) model += (a >> 16 & 0xf) << 4;
    if (fam == 0xf) fam += a >> 20 & 0xff;
    NCCLCHECK(set_int(c, "familyid", fam, 0));
    NCCLCHECK(set_int(c, "modelid", model, 0));
  }
#elif defined(__aarch64__)
  NCCLCHECK(topo_xml_set(c, "arch", "arm64"));
#elif defined(__powerpc64__)
  NCCLCHECK(topo_xml_set(c, "arch", "ppc64"));
#endif
  return topo_xml_add(root, c, 0);
}

/* The CPU element of NUMA node numa (made when missing). */
static ncclResult_t cpu_get(struct topo_xml* root, const char* sysfs, int numa,
                            struct topo_xml** out) {
  char want[16];
  snprintf(want, sizeof want, "%d", numa);
  *out = NULL;
  for (int i = 0; i < root->nkids; i++) {
    const char* n = topo_xml_get(root->kids[i], "numaid");
    if (strcmp(root->kids[i]->name, "cpu") == 0 && n && strcmp(n, want) == 0) {
      *out = root->kids[i];
      return ncclSuccess;
    }
  }
  return cpu_new(root, sysfs, numa, out);
}

static struct topo_xml* first_cpu(struct topo_xml* root) {
  return topo_xml_child(root, "cpu");
}

/* The slower of a device's and its upstream port's link (sysfs max_link_*). */
static ncclResult_t pci_links(struct topo_xml* x, const char* dir) {
  char up[PATH_MAX], s1[64], s2[64], w1[16], w2[16];
  snprintf(up, sizeof up, "%s/..", dir);
  read_line(dir, "max_link_speed", s1, sizeof s1);
  read_line(up, "max_link_speed", s2, sizeof s2);
  read_line(dir, "max_link_width", w1, sizeof w1);
  read_line(up, "max_link_width", w2, sizeof w2);
  const char* s = s1;
  if (s2[0] && (!s1[0] || strtof(s2, NULL) < strtof(s1, NULL))) s = s2;
  int w = atoi(w1), v = atoi(w2);
  if (v > 0 && (w <= 0 || v < w)) w = v;
  NCCLCHECK(topo_xml_fill(x, "link_speed", s));
  if (w > 0) NCCLCHECK(set_int(x, "link_width", w, 1));
  return ncclSuccess;
}

static ncclResult_t pci_new(const char* dir, const char* busid, struct topo_xml** out) {
  char cls[32];
  struct topo_xml* x = topo_xml_new("pci");
  *out = x;
  if (x == NULL) return ncclSystemError;
  NCCLCHECK(topo_xml_set(x, "busid", busid));
  read_line(dir, "class", cls, sizeof cls);
  NCCLCHECK(topo_xml_set(x, "class", cls[0] ? cls : "0x000000"));
  return pci_links(x, dir);
}

/* Places the PCI device at sysfs directory path in the tree (its parents too, up to one the tree
 * has or to its CPU). *out: its <pci> element. */
static ncclResult_t sysfs_attach(struct topo_xml* root, const char* sysfs, const char* path,
                                 struct topo_xml** out) {
  char dir[PATH_MAX], busid[16], tmp[32], numa[16];
  struct topo_xml* child = NULL;
  *out = NULL;
  snprintf(dir, sizeof dir, "%s", path);
  size_t n = 0;
  const char* c = last_comp(dir, strlen(dir), &n);
  if (!is_bdf(c, n)) return ncclSuccess;
  memcpy(tmp, c, n);
  tmp[n] = '\0';
  topo_busid_norm(tmp, busid);
  read_line(dir, "numa_node", numa, sizeof numa);
  for (;;) {
    struct topo_xml* x = NULL;
    NCCLCHECK(pci_new(dir, busid, &x));
    if (child != NULL) {
      NCCLCHECK(topo_xml_add(x, child, 1));
    } else {
      *out = x;
    }
    child = x;
    /* The parent: two components up is the switch's upstream port; a non-address means a CPU. */
    size_t n1 = 0, n2 = 0, e = (size_t)(c - dir);
    const char* c1 = last_comp(dir, e > 0 ? e - 1 : 0, &n1);
    const char* c2 = NULL;
    e = (size_t)(c1 - dir);
    if (is_bdf(c1, n1) && e > 0) c2 = last_comp(dir, e - 1, &n2);
    if (c2 == NULL || !is_bdf(c2, n2)) {
      struct topo_xml* cpu = NULL;
      read_line(dir, "numa_node", numa, sizeof numa);
      NCCLCHECK(cpu_get(root, sysfs, numa[0] ? atoi(numa) : -1, &cpu));
      return topo_xml_add(cpu, x, 1);
    }
    memcpy(tmp, c2, n2);
    tmp[n2] = '\0';
    topo_busid_norm(tmp, busid);
    struct topo_xml* have = find_pci(root, busid);
    if (have != NULL) return topo_xml_add(have, x, 1);
    dir[(size_t)(c2 - dir) + n2] = '\0';
    c = c2;
  }
}

/* The <pci> element of a device, found in the tree or placed from sysfs (or, when sysfs does
 * not know it, as a leaf of the first CPU). */
static ncclResult_t place(struct topo_xml* root, const char* sysfs, const char* busid,
                          const char* path, const char* cls, struct topo_xml** out) {
  char dev[PATH_MAX], real[PATH_MAX];
  *out = find_pci(root, busid);
  if (*out != NULL) return ncclSuccess;
  if (path == NULL || path[0] == '\0') {
    snprintf(dev, sizeof dev, "%s/bus/pci/devices/%s", sysfs, busid);
    path = dev;
  }
  if (realpath(path, real) != NULL) NCCLCHECK(sysfs_attach(root, sysfs, real, out));
  if (*out != NULL) return ncclSuccess;
  INFO(LOG_INIT | LOG_GRAPH, "topology: %s is not in sysfs (%s); placing it on the first CPU",
       busid, path);
  struct topo_xml* cpu = first_cpu(root);
  if (cpu == NULL) NCCLCHECK(cpu_new(root, sysfs, -1, &cpu));
  struct topo_xml* x = NULL;
  NCCLCHECK(pci_new("/nonexistent", busid, &x));
  NCCLCHECK(topo_xml_set(x, "class", cls));
  *out = x;
  return topo_xml_add(cpu, x, 1);
}

static int is_gpu(const struct topo_detect* d, const char* busid) {
  char a[16], b[16];
  if (!topo_busid_norm(busid, a)) return 0;
  for (int i = 0; i < d->ngpus; i++)
    if (topo_busid_norm(d->gpus[i].busid, b) && strcmp(a, b) == 0) return 1;
  return 0;
}

static ncclResult_t add_gpu(struct topo_xml* root, const struct topo_detect* d,
                            const struct topo_gpu_desc* g) {
  const char* sysfs = d->sysfs;
  char b[16];
  struct topo_xml* pci = NULL;
  if (!topo_busid_norm(g->busid, b)) {
    WARN("topology: GPU bus id '%s' is not a PCI address", g->busid);
    return ncclInvalidArgument;
  }
  NCCLCHECK(place(root, sysfs, b, NULL, "0x030200", &pci));
  struct topo_xml* gpu = topo_xml_child(pci, "gpu");
  if (gpu == NULL) {
    gpu = topo_xml_new("gpu");
    if (gpu == NULL) return ncclSystemError;
    NCCLCHECK(topo_xml_add(pci, gpu, 0));
  }
  NCCLCHECK(set_int(gpu, "dev", g->dev, 1));
  NCCLCHECK(set_int(gpu, "sm", g->sm, 1));
  NCCLCHECK(set_int(gpu, "rank", g->rank, 0));
  NCCLCHECK(set_int(gpu, "gdr", g->gdr, 1));
  if (topo_xml_child(gpu, "nvlink") == NULL) {
    for (int i = 0; i < g->nlinks; i++) {
      struct topo_xml* l = topo_xml_new("nvlink");
      if (l == NULL) return ncclSystemError;
      NCCLCHECK(topo_xml_add(gpu, l, 0));
      const char* t = g->links[i].target;
      NCCLCHECK(topo_xml_set(l, "target", t[0] ? t : "fffffff:ff:ff.0"));
      NCCLCHECK(set_int(l, "count", g->links[i].count, 0));
      NCCLCHECK(topo_xml_set(l, "tclass", is_gpu(d, t) ? "0x030200" : "0x068000"));
    }
  }
  mark(gpu);
  return ncclSuccess;
}

static ncclResult_t net_fill(struct topo_xml* net, const struct topo_nic_desc* d) {
  char guid[32];
  NCCLCHECK(set_int(net, "dev", d->dev, 0)); /* always the network's own index */
  NCCLCHECK(set_int(net, "latency", d->latency_us, 1));
  NCCLCHECK(set_int(net, "speed", d->speed_mbps, 1));
  NCCLCHECK(set_int(net, "port", d->port, 1));
  if (d->rail >= 0) NCCLCHECK(set_int(net, "rail", d->rail, 1));
  snprintf(guid, sizeof guid, "0x%llx", (unsigned long long)d->guid);
  NCCLCHECK(topo_xml_fill(net, "guid", guid));
  NCCLCHECK(set_int(net, "maxconn", d->max_comms, 1));
  NCCLCHECK(set_int(net, "gdr", d->gdr, 1));
  mark(net);
  return ncclSuccess;
}

static ncclResult_t add_nic(struct topo_xml* root, const char* sysfs,
                            const struct topo_nic_desc* d) {
  struct topo_xml* net = topo_xml_find(root, "net", "name", d->name);
  if (net != NULL) return net_fill(net, d);
  char b[16] = "", tmp[32];
  size_t n = 0;
  const char* c = last_comp(d->pci_path, strlen(d->pci_path), &n);
  struct topo_xml* up = NULL;
  if (is_bdf(c, n)) {
    memcpy(tmp, c, n);
    tmp[n] = '\0';
    topo_busid_norm(tmp, b);
    NCCLCHECK(place(root, sysfs, b, d->pci_path, "0x020000", &up));
  }
  if (up == NULL) { /* no PCI position (a virtual interface): on the first CPU */
    up = first_cpu(root);
    if (up == NULL) NCCLCHECK(cpu_new(root, sysfs, -1, &up));
  }
  struct topo_xml* nic = topo_xml_child(up, "nic");
  if (nic == NULL) {
    nic = topo_xml_new("nic");
    if (nic == NULL) return ncclSystemError;
    NCCLCHECK(topo_xml_add(up, nic, 0));
  }
  net = topo_xml_new("net");
  if (net == NULL) return ncclSystemError;
  NCCLCHECK(topo_xml_add(nic, net, 0));
  NCCLCHECK(topo_xml_set(net, "name", d->name));
  return net_fill(net, d);
}

static int trimmable(const struct topo_xml* x) {
  static const char* const names[] = {"cpu", "pci", "nic", "net", "gpu"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(x->name, names[i]) == 0) return 1;
  return 0;
}

static void trim(struct topo_xml* x) {
  for (int i = 0; i < x->nkids;) {
    struct topo_xml* k = x->kids[i];
    if (trimmable(k) && !k->keep) {
      topo_xml_unlink(k);
      topo_xml_free(k);
      continue;
    }
    trim(k);
    i++;
  }
}

ncclResult_t topo_detect_xml(const struct topo_detect* d, struct topo_xml** out) {
  ncclResult_t res = ncclSuccess;
  struct topo_xml* root = NULL;
  *out = NULL;
  if (d->file != NULL && d->file[0] != '\0') {
    INFO(LOG_INIT | LOG_GRAPH, "Loading topology file %s", d->file);
    NCCLCHECK(topo_xml_load(d->file, &root));
    const char* v = topo_xml_get(root, "version");
    if (strcmp(root->name, "system") != 0 || v == NULL || strcmp(v, "1") != 0) {
      WARN("the topology file %s must hold one <system version=\"1\"> element", d->file);
      res = ncclInvalidArgument;
      goto out;
    }
  } else {
    root = topo_xml_new("system");
    if (root == NULL) return ncclSystemError;
    NCCLCHECKGOTO(topo_xml_set(root, "version", "1"), res, out);
  }
  root->keep = 1;
  for (int i = 0; i < d->ngpus; i++) NCCLCHECKGOTO(add_gpu(root, d, &d->gpus[i]), res, out);
  for (int i = 0; i < d->nnics; i++) NCCLCHECKGOTO(add_nic(root, d->sysfs, &d->nics[i]), res, out);
  if (d->trim) trim(root);
out:
  if (res != ncclSuccess) {
    topo_xml_free(root);
    root = NULL;
  }
  *out = root;
  return res;
}

void topo_gpu_descs_free(struct topo_gpu_desc* d, int n) {
  for (int i = 0; d != NULL && i < n; i++) free(d[i].links);
  free(d);
}

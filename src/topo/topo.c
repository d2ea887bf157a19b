/* SPDX-License-Identifier: BSD-3-Clause */
/* The topology's paths and the choice of network devices (topo.h). Link bandwidths are NCCL's
 * effective figures, kept in one table each below (TOPOLOGY.md 6.1 of the design notes). */
#include "topo/topo.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/check.h"
#include "util/param.h"

static const char* const type_names[TOPO_NTYPES] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                    "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};

const char* topo_path_name(int type) {
  return type >= 0 && type < TOPO_NTYPES ? type_names[type] : "?";
}

int topo_path_parse(const char* s) {
  static const int legacy[] = {TOPO_LOC, TOPO_PIX, TOPO_PXB, TOPO_PHB, TOPO_SYS, TOPO_SYS};
  if (s == NULL || s[0] == '\0') return -1;
  if (s[0] >= '0' && s[0] <= '9') {
    char* end = NULL;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0) return -1;
    return v > 5 ? TOPO_SYS : legacy[v];
  }
  for (int t = 0; t < TOPO_NTYPES; t++)
    if (strcasecmp(s, type_names[t]) == 0) return t;
  return -1;
}

void topo_opts_default(struct topo_opts* o) {
  o->gdr_level = TOPO_P2C;
  o->p2p_level = TOPO_PXB;
  o->cross_nic = 2;
  o->nics_per_gpu = 0;
  o->pxn = 1;
}

static ncclResult_t level(enum param_id id, int* out) {
  const char* v = param_str(id);
  if (v[0] == '\0') return ncclSuccess;
  int t = topo_path_parse(v);
  if (t < 0) {
    WARN("%s=%s is not a path type: use LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB or SYS",
         param_info(id)->name, v);
    return ncclInvalidArgument;
  }
  *out = t;
  return ncclSuccess;
}

ncclResult_t topo_opts_from_params(struct topo_opts* o) {
  topo_opts_default(o);
  NCCLCHECK(level(PARAM_NET_GDR_LEVEL, &o->gdr_level));
  NCCLCHECK(level(PARAM_P2P_LEVEL, &o->p2p_level));
  o->cross_nic = (int)param_int(PARAM_CROSS_NIC);
  o->pxn = param_int(PARAM_PXN_DISABLE) == 0;
  const char* p = param_str(PARAM_NETDEVS_POLICY);
  char* end = NULL;
  if (strcasecmp(p, "AUTO") == 0 || p[0] == '\0')
    o->nics_per_gpu = 0;
  else if (strcasecmp(p, "ALL") == 0)
    o->nics_per_gpu = -1;
  else if (strncasecmp(p, "MAX:", 4) == 0 && (o->nics_per_gpu = (int)strtol(p + 4, &end, 10)) > 0 &&
           *end == '\0')
    ;
  else {
    WARN("NCCL_NETDEVS_POLICY=%s is not AUTO, ALL or MAX:n (n >= 1)", p);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

int topo_busid_norm(const char* s, char out[16]) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  int n = 0;
  if (s == NULL || strspn(s, "0123456789abcdefABCDEF:.") != strlen(s) ||
      sscanf(s, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) != 4 || s[n] != '\0' || dom > 0xffff ||
      bus > 0xff || dev > 0x1f || fn > 7)
    return 0;
  snprintf(out, 16, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
  return 1;
}

/* GB/s of one PCIe lane at the link's rate ("32.0 GT/s PCIe", "8 GT/s"; unknown: Gen3). */
static float lane_bw(const char* speed) {
  static const struct {
    float gts, bw;
  } rates[] = {{2.5f, 0.1875f}, {5.0f, 0.375f}, {8.0f, 0.75f},
               {16.0f, 1.5f},   {32.0f, 3.0f},  {64.0f, 6.0f}};
  float v = speed ? strtof(speed, NULL) : 0.0f;
  for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
    if (v == rates[i].gts) return rates[i].bw;
  return 0.75f;
}

/* The bandwidth of x's link to its parent. */
static float up_bw(const struct topo_xml* x) {
  if (strcmp(x->name, "nic") == 0) return 5000.0f; /* a NIC directly on a CPU */
  const char* w = topo_xml_get(x, "link_width");
  int width = w ? atoi(w) : 0;
  return (float)(width > 0 ? width : 16) * lane_bw(topo_xml_get(x, "link_speed"));
}

/* GB/s across the CPU-to-CPU interconnect, from the CPU model. */
static float sys_bw(const struct topo_xml* cpu) {
  const char* arch = topo_xml_get(cpu, "arch");
  const char* vendor = topo_xml_get(cpu, "vendor");
  const char* model = topo_xml_get(cpu, "modelid");
  int m = model ? atoi(model) : 0;
  if (arch && strcmp(arch, "ppc64") == 0) return 32.0f;
  if (vendor && strcmp(vendor, "AuthenticAMD") == 0) return 16.0f;
  if (vendor && strcmp(vendor, "GenuineIntel") == 0)
    return m >= 0xcf ? 40.0f : m >= 0x8f ? 22.0f : m >= 0x55 ? 10.0f : 6.0f;
  return 6.0f;
}

/* NVLink GB/s per link by compute capability. */
static float nvlink_bw(int sm) {
  if (sm >= 100) return 40.1f;
  if (sm >= 90) return 20.6f;
  if (sm == 86) return 12.0f;
  if (sm >= 70) return 20.0f;
  return 18.0f;
}

static int is_cpu(const struct topo_xml* x) {
  return strcmp(x->name, "cpu") == 0;
}

/* x's chain up to its CPU: x, its parents, the CPU last. Returns the length (0 when x hangs
 * under no CPU). */
static int chain(const struct topo_xml* x, const struct topo_xml** out, int max) {
  int n = 0;
  for (; x != NULL && n < max; x = x->parent) {
    out[n++] = x;
    if (is_cpu(x)) return n;
  }
  return 0;
}

#define CHAIN_MAX 80 /* deeper than any tree xml.c reads */
/* NVLink 3 and 4: GB/s per link and direction (NVLink 5 carries twice it) */
#define NVLINK_LANE_GBPS 25.0

/* The PCIe path between two devices a and b (the <pci> of each, or a CPU's <nic>); through_cpu
 * routes it through their CPU even when a switch joins them. */
static struct topo_path pci_path(const struct topo_xml* a, const struct topo_xml* b,
                                 int through_cpu) {
  struct topo_path p = {.type = TOPO_DIS, .bw = 0.0f, .via = -1};
  const struct topo_xml *ca[CHAIN_MAX], *cb[CHAIN_MAX];
  int na = chain(a, ca, CHAIN_MAX), nb = chain(b, cb, CHAIN_MAX);
  if (na == 0 || nb == 0) return p;
  int ia = na - 1, ib = nb - 1; /* the lowest common element: walk down from the CPUs */
  float bw = 1e9f;
  if (ca[ia] != cb[ib]) {
    for (int i = 0; i < na - 1; i++) bw = bw < up_bw(ca[i]) ? bw : up_bw(ca[i]);
    for (int i = 0; i < nb - 1; i++) bw = bw < up_bw(cb[i]) ? bw : up_bw(cb[i]);
    float s = sys_bw(ca[na - 1]);
    p.type = TOPO_SYS;
    p.bw = bw < s ? bw : s;
    return p;
  }
  if (!through_cpu)
    while (ia > 0 && ib > 0 && ca[ia - 1] == cb[ib - 1]) ia--, ib--;
  for (int i = 0; i < ia; i++) bw = bw < up_bw(ca[i]) ? bw : up_bw(ca[i]);
  for (int i = 0; i < ib; i++) bw = bw < up_bw(cb[i]) ? bw : up_bw(cb[i]);
  p.bw = bw;
  if (is_cpu(ca[ia]))
    p.type = TOPO_PHB;
  else /* joined by a switch: PIX when each side is right under it, else through several */
    p.type = ia <= 1 && ib <= 1 ? TOPO_PIX : TOPO_PXB;
  return p;
}

static int nvlinks_to(const struct topo_xml* gpu, const char* target, int to_switch) {
  int n = 0;
  for (int i = 0; i < gpu->nkids; i++) {
    const struct topo_xml* l = gpu->kids[i];
    if (strcmp(l->name, "nvlink") != 0) continue;
    const char* t = topo_xml_get(l, "target");
    const char* cls = topo_xml_get(l, "tclass");
    const char* cnt = topo_xml_get(l, "count");
    char tb[16];
    int hit = to_switch ? (cls && strcmp(cls, "0x068000") == 0)
                        : (t && topo_busid_norm(t, tb) && strcmp(tb, target) == 0);
    if (hit) n += cnt ? atoi(cnt) : 1;
  }
  return n;
}

static struct topo_path gpu_gpu_path(const struct topo_gpu* a, const struct topo_gpu* b) {
  struct topo_path p = {.type = TOPO_LOC, .bw = 5000.0f, .via = -1};
  if (a == b) return p;
  const struct topo_xml* ga = topo_xml_child(a->pci, "gpu");
  const struct topo_xml* gb = topo_xml_child(b->pci, "gpu");
  int direct = nvlinks_to(ga, b->busid, 0);
  int sa = nvlinks_to(ga, NULL, 1), sb = nvlinks_to(gb, NULL, 1);
  int links = direct ? direct : (sa < sb ? sa : sb);
  if (links > 0) {
    p.type = TOPO_NVL;
    p.bw = (float)links * nvlink_bw(a->sm);
    return p;
  }
  return pci_path(a->pci, b->pci, 0);
}

static ncclResult_t int_attr(const struct topo_xml* x, const char* name, int req, int def,
                             int* out) {
  const char* v = topo_xml_get(x, name);
  char* end = NULL;
  if (v == NULL) {
    if (!req) {
      *out = def;
      return ncclSuccess;
    }
    WARN("topology: <%s> lacks its %s attribute", x->name, name);
    return ncclInvalidArgument;
  }
  long l = strtol(v, &end, 0);
  if (end == v || *end != '\0') {
    WARN("topology: <%s %s=\"%s\"> is not a number", x->name, name, v);
    return ncclInvalidArgument;
  }
  *out = (int)l;
  return ncclSuccess;
}

static ncclResult_t add_gpu(struct topo_system* s, const struct topo_xml* g) {
  struct topo_gpu* u = &s->gpus[s->ngpus];
  const char* b = g->parent ? topo_xml_get(g->parent, "busid") : NULL;
  if (g->parent == NULL || strcmp(g->parent->name, "pci") != 0 || !topo_busid_norm(b, u->busid)) {
    WARN("topology: a <gpu> must sit in a <pci> element with a busid like 0000:1b:00.0");
    return ncclInvalidArgument;
  }
  NCCLCHECK(int_attr(g, "dev", 1, 0, &u->dev));
  NCCLCHECK(int_attr(g, "sm", 1, 0, &u->sm));
  NCCLCHECK(int_attr(g, "gdr", 0, 0, &u->gdr));
  NCCLCHECK(int_attr(g, "rank", 0, -1, &u->rank));
  u->pci = g->parent;
  s->ngpus++;
  return ncclSuccess;
}

static ncclResult_t add_net(struct topo_system* s, const struct topo_xml* x) {
  struct topo_net* n = &s->nets[s->nnets];
  const char* name = topo_xml_get(x, "name");
  if (topo_xml_get(x, "dev") == NULL) return ncclSuccess; /* NCCL ignores a net without dev */
  if (x->parent == NULL || strcmp(x->parent->name, "nic") != 0 || name == NULL) {
    WARN("topology: a <net> must sit in a <nic> element and have a name");
    return ncclInvalidArgument;
  }
  snprintf(n->name, sizeof n->name, "%s", name);
  const struct topo_xml* up = x->parent->parent;
  const char* b = up && strcmp(up->name, "pci") == 0 ? topo_xml_get(up, "busid") : NULL;
  if (b == NULL || !topo_busid_norm(b, n->busid)) n->busid[0] = '\0';
  NCCLCHECK(int_attr(x, "dev", 1, 0, &n->dev));
  NCCLCHECK(int_attr(x, "speed", 0, 0, &n->speed_mbps));
  if (n->speed_mbps <= 0) n->speed_mbps = 10000;
  NCCLCHECK(int_attr(x, "port", 0, 0, &n->port));
  NCCLCHECK(int_attr(x, "gdr", 0, 0, &n->gdr));
  NCCLCHECK(int_attr(x, "rail", 0, -1, &n->rail));
  const char* guid = topo_xml_get(x, "guid");
  n->guid = guid ? strtoull(guid, NULL, 16) : (uint64_t)n->dev;
  n->net = x;
  s->nnets++;
  return ncclSuccess;
}

static void count(const struct topo_xml* x, int* gpus, int* nets) {
  *gpus += strcmp(x->name, "gpu") == 0;
  *nets += strcmp(x->name, "net") == 0;
  for (int i = 0; i < x->nkids; i++) count(x->kids[i], gpus, nets);
}

static ncclResult_t collect(struct topo_system* s, const struct topo_xml* x) {
  if (strcmp(x->name, "gpu") == 0) NCCLCHECK(add_gpu(s, x));
  if (strcmp(x->name, "net") == 0) NCCLCHECK(add_net(s, x));
  for (int i = 0; i < x->nkids; i++) NCCLCHECK(collect(s, x->kids[i]));
  return ncclSuccess;
}

/* GPU->NIC paths: over PCIe, through the CPU where GPUDirect RDMA is not allowed, then through an
 * NVLink peer GPU (PXN) where that is closer or wider. */
static void gpu_net_paths(struct topo_system* s) {
  const struct topo_opts* o = &s->opts;
  for (int g = 0; g < s->ngpus; g++) {
    for (int n = 0; n < s->nnets; n++) {
      const struct topo_gpu* u = &s->gpus[g];
      const struct topo_net* v = &s->nets[n];
      const struct topo_xml* nic = v->net->parent;
      const struct topo_xml* at =
          nic->parent && strcmp(nic->parent->name, "pci") == 0 ? nic->parent : nic;
      struct topo_path p = pci_path(u->pci, at, 0);
      float net_bw = (float)v->speed_mbps / 8000.0f;
      p.gdr = u->gdr && v->gdr && p.type <= o->gdr_level;
      if (!p.gdr && p.type < TOPO_PHB) p = pci_path(u->pci, at, 1);
      if (p.bw > net_bw) p.bw = net_bw;
      s->gpu_net[g * s->nnets + n] = p;
    }
  }
  if (!o->pxn) return;
  size_t cells = (size_t)s->ngpus * (size_t)s->nnets;
  struct topo_path* direct = malloc(sizeof *direct * (cells ? cells : 1));
  if (direct == NULL) return; /* no PXN: every path stays as it is */
  memcpy(direct, s->gpu_net, sizeof *direct * cells);
  for (int g = 0; g < s->ngpus; g++) {
    for (int n = 0; n < s->nnets; n++) {
      struct topo_path* p = &s->gpu_net[g * s->nnets + n];
      for (int h = 0; h < s->ngpus; h++) {
        const struct topo_path* gh = &s->gpu_gpu[g * s->ngpus + h];
        const struct topo_path* hn = &direct[h * s->nnets + n];
        if (h == g || gh->type != TOPO_NVL || hn->type > TOPO_PXB || !hn->gdr) continue;
        float bw = gh->bw < hn->bw ? gh->bw : hn->bw;
        if (bw > p->bw || (p->type > TOPO_PXN && bw >= p->bw)) {
          p->type = TOPO_PXN;
          p->bw = bw;
          p->gdr = 1;
          p->via = h;
        }
      }
    }
  }
  free(direct);
}

ncclResult_t topo_system_make(struct topo_xml* root, const struct topo_opts* o,
                              struct topo_system** out) {
  ncclResult_t res = ncclSuccess;
  struct topo_system* s = NULL;
  int ngpus = 0, nnets = 0;
  *out = NULL;
  const char* ver = root ? topo_xml_get(root, "version") : NULL;
  if (root == NULL || strcmp(root->name, "system") != 0 || ver == NULL || strcmp(ver, "1") != 0) {
    WARN("topology: the top element must be <system version=\"1\">");
    topo_xml_free(root);
    return ncclInvalidArgument;
  }
  s = calloc(1, sizeof *s);
  if (s == NULL) {
    topo_xml_free(root);
    return ncclSystemError;
  }
  s->root = root;
  s->opts = *o;
  count(root, &ngpus, &nnets);
  s->gpus = calloc((size_t)ngpus + 1, sizeof *s->gpus);
  s->nets = calloc((size_t)nnets + 1, sizeof *s->nets);
  s->gpu_gpu = calloc((size_t)ngpus * (size_t)ngpus + 1, sizeof *s->gpu_gpu);
  s->gpu_net = calloc((size_t)ngpus * (size_t)nnets + 1, sizeof *s->gpu_net);
  if (!s->gpus || !s->nets || !s->gpu_gpu || !s->gpu_net) {
    WARN("out of host memory for the topology of %d GPUs and %d network devices", ngpus, nnets);
    res = ncclSystemError;
    goto out;
  }
  NCCLCHECKGOTO(collect(s, root), res, out);
  for (int g = 0; g < s->ngpus; g++) {
    for (int h = 0; h < g; h++) {
      if (strcmp(s->gpus[g].busid, s->gpus[h].busid) == 0) {
        WARN("topology: GPU %s appears twice", s->gpus[g].busid);
        res = ncclInvalidArgument;
        goto out;
      }
    }
    for (int h = 0; h < s->ngpus; h++)
      s->gpu_gpu[g * s->ngpus + h] = gpu_gpu_path(&s->gpus[g], &s->gpus[h]);
  }
  gpu_net_paths(s);
out:
  if (res != ncclSuccess) {
    topo_system_free(s);
    s = NULL;
  }
  *out = s;
  return res;
}

void topo_system_free(struct topo_system* s) {
  if (s == NULL) return;
  topo_xml_free(s->root);
  free(s->gpus);
  free(s->nets);
  free(s->gpu_gpu);
  free(s->gpu_net);
  free(s);
}

int topo_gpu_find(const struct topo_system* s, const char* busid) {
  char b[16];
  if (!topo_busid_norm(busid, b)) return -1;
  for (int g = 0; g < s->ngpus; g++)
    if (strcmp(s->gpus[g].busid, b) == 0) return g;
  return -1;
}

/* Whether path p beats q for a NIC choice: wider first, then closer. */
static int better(const struct topo_path* p, const struct topo_path* q) {
  return p->bw > q->bw || (p->bw == q->bw && p->type < q->type);
}
static int same(const struct topo_path* p, const struct topo_path* q) {
  return p->bw == q->bw && p->type == q->type;
}

/* The GPUs as close to net n as any (NCCL: the GPUs local to it). */
static int local_gpus(const struct topo_system* s, int n) {
  const struct topo_path* best = NULL;
  int k = 0;
  for (int g = 0; g < s->ngpus; g++) {
    const struct topo_path* p = &s->gpu_net[g * s->nnets + n];
    if (best == NULL || better(p, best)) {
      best = p;
      k = 1;
    } else if (same(p, best)) {
      k++;
    }
  }
  return k;
}

static int bit_reverse(int v, int bits) {
  int r = 0;
  for (int i = 0; i < bits; i++) r |= (v >> i & 1) << (bits - 1 - i);
  return r;
}

int topo_gpu_nets(const struct topo_system* s, int g, int* nets, int max) {
  if (g < 0 || g >= s->ngpus || s->nnets == 0) return 0;
  int* l = malloc(sizeof *l * (size_t)s->nnets);
  if (l == NULL) return 0;
  const struct topo_path* row = &s->gpu_net[g * s->nnets];
  int nl = 0, best = 0;
  for (int n = 1; n < s->nnets; n++)
    if (better(&row[n], &row[best])) best = n;
  for (int n = 0; n < s->nnets; n++)
    if (same(&row[n], &row[best])) l[nl++] = n;
  int shares = local_gpus(s, l[0]);
  int per = s->opts.nics_per_gpu == 0  ? (nl + shares - 1) / shares
            : s->opts.nics_per_gpu < 0 ? nl
                                       : (s->opts.nics_per_gpu < nl ? s->opts.nics_per_gpu : nl);
  int start = s->gpus[g].dev % shares;
  if (nl > 1 && (nl & (nl - 1)) == 0) {
    int bits = 0;
    while ((1 << bits) < nl) bits++;
    start = bit_reverse(start & (nl - 1), bits);
  }
  int k = 0;
  int rail = s->nets[l[start % nl]].rail;
  for (int i = 0; i < per; i++) {
    int n = l[(start + i) % nl];
    if (s->opts.cross_nic == 0 && rail >= 0 && s->nets[n].rail != rail) continue;
    if (k < max) nets[k] = n;
    k++;
  }
  free(l);
  return k;
}

int topo_channel_dev(const struct topo_system* s, int g, int c) {
  int* nets = malloc(sizeof *nets * (size_t)(s->nnets + 1));
  int n = nets ? topo_gpu_nets(s, g, nets, s->nnets) : 0;
  int dev = n > 0 ? s->nets[nets[c % n]].dev : -1;
  free(nets);
  return dev;
}

int topo_p2p_ok(const struct topo_system* s, int g, int h) {
  if (g < 0 || h < 0 || g >= s->ngpus || h >= s->ngpus) return 1;
  return s->gpu_gpu[g * s->ngpus + h].type <= s->opts.p2p_level;
}

/* The <cpu> a network device hangs from. */
static const struct topo_xml* net_cpu(const struct topo_net* n) {
  const struct topo_xml* x = n->net;
  while (x != NULL && !is_cpu(x)) x = x->parent;
  return x;
}

int topo_cpu_nets(const struct topo_system* s, int numa, int* nets, int max) {
  char want[16];
  int best = -1, local = 0, k = 0;
  snprintf(want, sizeof want, "%d", numa);
  for (int n = 0; n < s->nnets; n++) {
    const struct topo_xml* c = net_cpu(&s->nets[n]);
    const char* id = c ? topo_xml_get(c, "numaid") : NULL;
    int here = numa >= 0 && id != NULL && strcmp(id, want) == 0;
    if (here && !local) best = -1; /* a device on this node beats every other */
    local |= here;
    if ((here || !local) && s->nets[n].speed_mbps > best) best = s->nets[n].speed_mbps;
  }
  for (int n = 0; n < s->nnets; n++) {
    const struct topo_xml* c = net_cpu(&s->nets[n]);
    const char* id = c ? topo_xml_get(c, "numaid") : NULL;
    int here = numa >= 0 && id != NULL && strcmp(id, want) == 0;
    if ((local && !here) || s->nets[n].speed_mbps != best) continue;
    if (k < max) nets[k] = n;
    k++;
  }
  return k;
}

/* Whether CPU `cpu` is in a sysfs cpumap ("ffffffff,0000ffff": 32-bit words, highest first). */
static int in_cpumap(const char* map, int cpu) {
  int words = 1;
  for (const char* p = map; *p; p++) words += *p == ',';
  int word = cpu / 32, w = words - 1;
  for (const char* p = map; *p && w >= 0; w--) {
    char* end = NULL;
    unsigned long v = strtoul(p, &end, 16);
    if (w == word) return (int)(v >> (cpu % 32) & 1);
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

int topo_cpu_numa(const struct topo_system* s, int cpu) {
  for (int i = 0; i < s->root->nkids; i++) {
    const struct topo_xml* c = s->root->kids[i];
    const char* map = is_cpu(c) ? topo_xml_get(c, "affinity") : NULL;
    const char* id = map ? topo_xml_get(c, "numaid") : NULL;
    if (id != NULL && in_cpumap(map, cpu)) return atoi(id);
  }
  return -1;
}

double topo_gpu_nvlink_gbps(const struct topo_system* s, int g) {
  if (g < 0 || g >= s->ngpus) return 0.0;
  const struct topo_xml* gpu = topo_xml_child(s->gpus[g].pci, "gpu");
  int links = 0;
  for (int i = 0; gpu != NULL && i < gpu->nkids; i++) {
    const char* c = topo_xml_get(gpu->kids[i], "count");
    if (strcmp(gpu->kids[i]->name, "nvlink") == 0) links += c ? atoi(c) : 1;
  }
  /* per link and direction: NVLink 3 and 4 (compute capability below 10) one lane rate, NVLink 5
   * twice it */
  return (double)links * (s->gpus[g].sm >= 100 ? 2 * NVLINK_LANE_GBPS : NVLINK_LANE_GBPS);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The node's topology: its GPUs and network devices, the path between each pair as NCCL types
 * it (LOC ... SYS), and which network device each GPU's channels use.
 *
 * The topology is an XML tree in NCCL's format (xml.h): read from NCCL_TOPO_FILE, completed from
 * sysfs and NVML and the network's devices (detect.c), written by NCCL_TOPO_DUMP_FILE. A
 * `topo_system` is that tree with the paths computed (topo.c); the choice of a GPU's network
 * devices follows NCCL's rule: the devices of highest path bandwidth, among them the closest;
 * shared among the GPUs equally close to the first of them, rotated so that equals spread. Every
 * host that looks the same makes the same choice, so GPU i uses the same rail on every host.
 * Pure except detect.c (files) and nvml.c (NVML, loaded at run time). Called by core/ and the
 * engines. */
#ifndef MONEL_TOPO_TOPO_H
#define MONEL_TOPO_TOPO_H
#include <stdint.h>
#include "nccl.h"
#include "topo/xml.h"

/* NCCL's path types, closest first (their order is their value). */
enum topo_path_type {
  TOPO_LOC,
  TOPO_NVL,
  TOPO_NVB,
  TOPO_C2C,
  TOPO_PIX,
  TOPO_PXB,
  TOPO_P2C,
  TOPO_PXN,
  TOPO_PHB,
  TOPO_SYS,
  TOPO_NET,
  TOPO_DIS,
  TOPO_NTYPES
};
const char* topo_path_name(int type);
/* A level as NCCL's variables take it: a type name (any case) or a legacy number 0-5 (LOC, PIX,
 * PXB, PHB, SYS, SYS). -1 when s names none. */
int topo_path_parse(const char* s);

/* What the environment asks of the topology (NCCL_NET_GDR_LEVEL, NCCL_P2P_LEVEL, NCCL_CROSS_NIC,
 * NCCL_NETDEVS_POLICY, NCCL_PXN_DISABLE): filled by topo_opts_from_params, or by tests. */
struct topo_opts {
  int gdr_level;    /* GPUDirect RDMA between a GPU and a NIC up to this path type */
  int p2p_level;    /* peer-to-peer between two GPUs up to this path type */
  int cross_nic;    /* 0: a GPU's network devices only on its own rail; 1, 2: any */
  int nics_per_gpu; /* 0: as many as its share (AUTO); -1: all it is closest to; n: at most n */
  int pxn;          /* a NIC reached through an NVLink peer counts as PXN */
};
/* Fails with a sentence when a variable holds a value NCCL does not accept. */
ncclResult_t topo_opts_from_params(struct topo_opts* o);
void topo_opts_default(struct topo_opts* o);

struct topo_gpu {
  char busid[16]; /* dddd:bb:dd.f, lowercase */
  int dev;        /* NVML index (the file's `dev`) */
  int sm;
  int gdr;
  int rank;
  const struct topo_xml* pci; /* its <pci> element */
};

struct topo_net {
  char name[64];
  char busid[16]; /* "" for a device with no PCI position */
  int dev;        /* the network's device index */
  int speed_mbps;
  uint64_t guid;
  int port;
  int gdr;
  int rail; /* -1: not given */
  const struct topo_xml* net;
};

struct topo_path {
  int type;
  float bw; /* GB/s, NCCL's effective figures (TOPOLOGY.md 6.1) */
  int gdr;  /* GPUDirect RDMA allowed on this GPU->NIC path */
  int via;  /* PXN: the GPU whose NIC this is; else -1 */
};

struct topo_system {
  struct topo_xml* root;
  struct topo_gpu* gpus;
  int ngpus;
  struct topo_net* nets;
  int nnets;
  struct topo_path* gpu_net; /* [g * nnets + n] */
  struct topo_path* gpu_gpu; /* [g * ngpus + h] */
  struct topo_opts opts;
};

/* The system of a complete tree (takes root; freed with the system). Refuses with a sentence a
 * tree that is not NCCL topology XML of version 1, or a GPU or NIC with a malformed attribute. */
ncclResult_t topo_system_make(struct topo_xml* root, const struct topo_opts* o,
                              struct topo_system** out);
void topo_system_free(struct topo_system* s);

/* Index of the GPU with that bus id (any case; 4- or 8-digit domain), or -1. */
int topo_gpu_find(const struct topo_system* s, const char* busid);
/* The network devices (indices into s->nets) GPU g's channels rotate over, in channel order:
 * channel c uses nets[c % n]. Returns n (0 without a network device); at most max are stored. */
int topo_gpu_nets(const struct topo_system* s, int g, int* nets, int max);
/* The network device (its `dev`) for channel c of GPU g, or -1 with no network device. */
int topo_channel_dev(const struct topo_system* s, int g, int c);
/* The network devices nearest CPU numa node `numa` (a CPU-engine rank's, -1: unknown): the
 * fastest of those on that node, else the fastest of all; indices into s->nets, in XML order.
 * Returns their number (at most max stored). */
int topo_cpu_nets(const struct topo_system* s, int numa, int* nets, int max);
/* The NUMA node whose <cpu affinity> holds CPU `cpu`, or -1. */
int topo_cpu_numa(const struct topo_system* s, int cpu);
/* GPU g's NVLink bandwidth per direction at the links' nominal rate (links x the rate of its
 * generation), GB/s; 0 when the topology knows no NVLink of it. */
double topo_gpu_nvlink_gbps(const struct topo_system* s, int g);
/* Whether GPUs g and h may use peer-to-peer memory (their path within NCCL_P2P_LEVEL). */
int topo_p2p_ok(const struct topo_system* s, int g, int h);

/* "0000:1B:00.0", "00000000:1b:00.0" -> "0000:1b:00.0"; 0 when s is not a PCI address. */
int topo_busid_norm(const char* s, char out[16]);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Building this host's topology tree (NCCL's XML, xml.h) from a topology file, sysfs, NVML and
 * the network's devices, the way NCCL completes a file: a device the file names stays where the
 * file puts it and keeps the file's attributes; one it does not name is placed by walking sysfs
 * up from the device (a device's parent is the switch above its upstream port); a network
 * device is joined by name, then by the PCI address its path ends in, else placed from sysfs,
 * else under the first CPU. Then, with `trim`, every element that no GPU or network device of
 * this host sits under is dropped (a file lists devices this host may not have). */
#ifndef MONEL_TOPO_DETECT_H
#define MONEL_TOPO_DETECT_H
#include <stdint.h>
#include "nccl.h"
#include "topo/xml.h"

struct topo_nvlink_desc {
  char target[16]; /* bus id of the far end ("" for an NVSwitch that cannot be seen) */
  int count;
};

struct topo_gpu_desc {
  char busid[16];
  int dev; /* NVML index */
  int sm;
  int gdr; /* the driver can give a NIC this GPU's memory */
  int rank;
  struct topo_nvlink_desc* links; /* NULL: none known */
  int nlinks;
};

struct topo_nic_desc {
  char name[64];
  char pci_path[256]; /* its sysfs directory, "" when it has none */
  int dev;
  int speed_mbps;
  uint64_t guid;
  int port;
  int gdr;
  int latency_us;
  int max_comms;
  int rail; /* -1: not given */
};

struct topo_detect {
  const struct topo_gpu_desc* gpus;
  int ngpus;
  const struct topo_nic_desc* nics;
  int nnics;
  const char* file;  /* a topology file to start from, or NULL */
  const char* sysfs; /* the sysfs root ("/sys") */
  int trim;
};

ncclResult_t topo_detect_xml(const struct topo_detect* d, struct topo_xml** out);

/* The topology file this process starts from: NCCL_TOPO_FILE, else the driver's virtual
 * topology file where it exists, else NULL. */
const char* topo_file_path(void);

/* Every GPU NVML sees (*out malloc'ed, with their links; topo_gpu_descs_free). 0 GPUs when NVML
 * cannot be loaded. */
ncclResult_t topo_nvml_gpus(struct topo_gpu_desc** out, int* n);
void topo_gpu_descs_free(struct topo_gpu_desc* d, int n);

#endif

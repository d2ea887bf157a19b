/* SPDX-License-Identifier: BSD-3-Clause */
/* This host's topology (topo/topo.h) with the network this process uses: built once, read by
 * the engines to pick each GPU's network devices, by the api for monel-info, and dumped at init
 * when NCCL_TOPO_DUMP_FILE asks. */
#ifndef MONEL_CORE_NODE_TOPO_H
#define MONEL_CORE_NODE_TOPO_H
#include <stddef.h>
#include "nccl.h"
#include "topo/topo.h"

/* The system (never freed while the process runs). A topology file that does not parse, or a
 * variable with a value NCCL does not accept, fails with a sentence every time it is asked. */
ncclResult_t node_topo_get(const struct topo_system** out);
/* The index of the GPU with that bus id, added (with cuda_dev as its index) when missing. */
ncclResult_t node_topo_gpu(const char* busid, int cuda_dev, int* g);
/* Whether the path from the GPU at busid to network device dev allows GPUDirect RDMA (within
 * NCCL_NET_GDR_LEVEL, a NIC that advertises it); *type: the path type (-1: not in the topology,
 * and then *ok is 1: nothing says no). */
ncclResult_t node_topo_path_gdr(const char* busid, int cuda_dev, int dev, int* ok, int* type);
/* The NVLink bandwidth per direction of the GPU at busid (topo_gpu_nvlink_gbps; 0: none known). */
ncclResult_t node_topo_nvlink_gbps(const char* busid, int cuda_dev, double* gbps);
/* The network devices the channels of the GPU at busid rotate over (channel c uses
 * (*devs)[c % *n]; malloc'ed, at least one: device 0 when there is no choice). */
ncclResult_t node_topo_net_devs(const char* busid, int cuda_dev, int** devs, int* n);
/* The network device of a CPU-engine rank: the nearest to the first CPU it may run on, rotated
 * by its index among the comm's ranks on this host (0 when there is no choice). */
ncclResult_t node_topo_cpu_net_dev(int local_index, int* dev);
/* monel-info --topo: one line per (GPU, network device it uses):
 * "GPU <cuda dev> <bus id> -> NIC <name> <bus id> <path type> <speed Gb/s>". cuda_dev_of maps
 * a bus id to its CUDA device index (NULL or -1: the GPU's NVML/file index). */
ncclResult_t node_topo_lines(char* buf, size_t len, int (*cuda_dev_of)(const char* busid));
/* Writes NCCL_TOPO_DUMP_FILE when this is NCCL_TOPO_DUMP_FILE_RANK. */
void node_topo_dump(int rank);

#endif

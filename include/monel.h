/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * monel.h - what Monel offers beyond the NCCL API.
 *
 * Everything here keeps to the nccl* namespace, so libnccl.so.2 exports only
 * nccl* and pncclX names. Each function has a pncclX twin, like those of
 * nccl.h. A program that uses these calls should first check that the loaded
 * library is Monel (ncclMonelGetVersionString returns ncclSuccess).
 */
#ifndef MONEL_H_
#define MONEL_H_

#include "nccl.h"

#define MONEL_VERSION_MAJOR 0
#define MONEL_VERSION_MINOR 1
#define MONEL_VERSION_PATCH 0
#define MONEL_VERSION_CODE                                                                         \
  (MONEL_VERSION_MAJOR * 10000 + MONEL_VERSION_MINOR * 100 + MONEL_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/*
 * All-to-all with a count and offset per pair of ranks (VCCL's signature).
 *
 * sendcounts, sdispls, recvcounts and rdispls are host arrays of nranks*nranks
 * entries, in elements, identical on every rank: row i (entries i*nranks ..
 * i*nranks+nranks-1) describes rank i. Rank i sends sendcounts[i*nranks+j]
 * elements starting at sendbuff + sdispls[i*nranks+j] to rank j, and receives
 * recvcounts[i*nranks+j] elements from rank j at recvbuff + rdispls[i*nranks+j].
 * relaybuff (relaycount elements) is scratch space for staging data between
 * hosts; it may be NULL when all ranks share one host.
 */
ncclResult_t ncclAlltoAllv(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                           void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                           void* relaybuff, size_t relaycount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAllv(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                            void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                            void* relaybuff, size_t relaycount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);

/* Sets *version to Monel's own version, e.g. "0.1.0" (static storage). */
ncclResult_t ncclMonelGetVersionString(const char** version);
ncclResult_t pncclMonelGetVersionString(const char** version);

/* Sets *name to the engine that runs comm's operations: "cpu" (host memory)
 * or "gpu" (CUDA kernels). The string has static storage. */
ncclResult_t ncclMonelCommGetEngine(ncclComm_t comm, const char** name);
ncclResult_t pncclMonelCommGetEngine(ncclComm_t comm, const char** name);

/*
 * Writes into buf (len bytes, NUL-terminated, cut short when too small) one
 * line per GPU of this host and network device its channels use:
 *   GPU <cuda dev> <pci bus id> -> NIC <name> <pci bus id> <path type> <Gb/s>
 * from the topology Monel detects (sysfs, NVML, the network's devices) or,
 * on a machine without a GPU, from NCCL_TOPO_FILE alone. The path type is
 * NCCL's (NVL, PIX, PXB, PHB, SYS, PXN, ...); "-" stands for a device with
 * no PCI address.
 */
ncclResult_t ncclMonelTopoInfo(char* buf, size_t len);
ncclResult_t pncclMonelTopoInfo(char* buf, size_t len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MONEL_H_ */

/* SPDX-License-Identifier: BSD-3-Clause */
/* Host identity: which ranks share a host (and so can share memory), and what a rank tells its
 * peers about itself. */
#ifndef MONEL_TOPO_HOST_H
#define MONEL_TOPO_HOST_H
#include <stddef.h>
#include <stdint.h>

/* What every rank learns about every other rank at init (core/comm.c gathers them): where it
 * runs, which decides which transports can connect two ranks. */
struct peer_info {
  uint64_t host_hash;    /* topo_host_hash() of its host */
  uint64_t machine_hash; /* topo_machine_hash(): the machine whose cores it runs on */
  int pid;
  int cuda_dev;
  int rank;
  char host[64];
  char engine[8]; /* the engine's name ("cpu", "gpu"): every rank of a comm runs the same */
};

/* 64-bit FNV-1a of a byte string. */
uint64_t topo_hash(const void* data, size_t len);
/* Same value on every process of this host (and IPC namespace); differs between hosts.
 * Built from the host name, the boot id and the IPC namespace; MONEL_HOST_ID overrides it. */
uint64_t topo_host_hash(void);
void topo_host_name(char* buf, size_t len);

/* The running kernel's boot id (the host name where it cannot be read): the same for every
 * process on one machine, whatever MONEL_HOST_ID or namespaces say. Ranks with the same value
 * share the machine's cores. */
uint64_t topo_machine_hash(void);
/* CPUs this process may run on (its affinity mask; 1 at least). */
int topo_cpus(void);

/* Helper threads per connection of the built-in TCP network, and data sockets per thread, when
 * NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD leave them to Monel and a GPU comm reported its
 * ranks on this machine (net_machine_ranks): 2 while each has TOPO_CORES_FOR_TWO cores or more
 * (cpus / ranks_here), else 1 (a thread of one socket). Where ranks share the cores, more threads
 * only compete with the ranks' polling proxies: with 4 and 8 ranks on 16 cores one thread of one
 * socket carried more than two, with 2 ranks two carried more (measured on one H100 and one H200,
 * every rank its own host under MPS; the figures are in docs/PERFORMANCE.md at commit 212cdd8,
 * "One TCP helper thread per connection where ranks share the cores"). */
#define TOPO_CORES_FOR_TWO 8
int topo_socket_threads(int cpus, int ranks_here);

/* From how many ranks the GPU engine's one hop runs by recursive doubling (gpu/peers.h) when
 * MONEL_NET_ONEHOP_DOUBLING leaves it to Monel: TOPO_DOUBLING_FROM while each rank on this machine
 * has TOPO_CORES_FOR_CHAINS CPUs or more, else never (0). Doubling trades the one hop's n-1
 * messages at once for log2 n trips one after another, each waiting for two proxies, which need
 * cores to be awake: it won at 8 ranks with 2 CPUs each, lost at 4 ranks and where ranks had
 * fewer CPUs, and past a power of two the extra ranks cost 2 more hops, so the GPU engine doubles
 * on powers of two only (one H200, every rank its own host under MPS; the figures are in
 * docs/PERFORMANCE.md at commit 212cdd8, "Recursive doubling"). */
#define TOPO_DOUBLING_FROM    8
#define TOPO_CORES_FOR_CHAINS 2
int topo_doubling_from(int cpus, int ranks_here);

#endif

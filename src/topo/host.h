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
 * (cpus / ranks_here), else 1 (a thread of one socket). Measured on one H100 and one H200 with 16
 * cores, every rank its own host under MPS, AllReduce through the ring and the tree
 * (docs/PERFORMANCE.md, "One TCP helper thread per connection where ranks share the cores" and
 * "The network ring's steps: slices, channel bytes and data sockets"): with 2 ranks (8 cores
 * each) 2 threads carried 128 MB at 10.1 GB/s, 1 thread at 9.1; with 4 ranks (4 cores each) 1
 * thread carried 16 MB at 3.76 GB/s and 128 MB at 4.42, 2 threads 3.21 and 3.35, and one socket a
 * thread 2 MB, 16 MB and 128 MB at 2.18, 3.70 and 4.36 GB/s against two sockets' 1.51, 3.02 and
 * 4.06; with 8 ranks one thread 1.68 against 1.45 and 2.03 against 1.82, one socket a thread 2.05
 * against 1.83 and 2.49 against 1.87. */
#define TOPO_CORES_FOR_TWO 8
int topo_socket_threads(int cpus, int ranks_here);

/* From how many ranks the GPU engine's one hop runs by recursive doubling (gpu/peers.h) when
 * MONEL_NET_ONEHOP_DOUBLING leaves it to Monel: TOPO_DOUBLING_FROM while each rank on this machine
 * has TOPO_CORES_FOR_CHAINS CPUs or more, else never (0). Doubling trades the one hop's n-1
 * messages at once for log2 n trips one after another, each waiting for two proxies, which need
 * cores to be awake. Measured on one H200 with 16 cores, every rank its own host under MPS
 * (docs/PERFORMANCE.md, "Recursive doubling"): 8 ranks (2 CPUs each): AllReduce 512 B-32 KB in
 * 0.81-0.95x the time of every peer at once, 8-64 B level; 4 ranks: 1.09-1.14x at 8-64 B; 12
 * ranks (1.3 CPUs each): 8-26 ms an operation against 0.42-2.4 ms; 16 ranks (1 each): 18-22 ms
 * against 7.4-7.8 ms. Past a power of two the extra ranks cost 2 more hops: 6 ranks took 84-94 us
 * at 8 B-4 KB against 63-75 us, so the GPU engine doubles on powers of two only. */
#define TOPO_DOUBLING_FROM    8
#define TOPO_CORES_FOR_CHAINS 2
int topo_doubling_from(int cpus, int ranks_here);

#endif

/* Host identity: which ranks share a host (and so can share memory), and what a rank tells its
 * peers about itself. */
#ifndef MONEL_TOPO_HOST_H
#define MONEL_TOPO_HOST_H
#include <stddef.h>
#include <stdint.h>

/* What every rank learns about every other rank at init (core/comm.c gathers them): where it
 * runs, which decides which transports can connect two ranks. */
struct peer_info {
  uint64_t host_hash; /* topo_host_hash() of its host */
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

#endif

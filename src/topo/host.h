/* Host identity: which ranks share a host (and so can share memory). */
#ifndef MONEL_TOPO_HOST_H
#define MONEL_TOPO_HOST_H
#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of a byte string. */
uint64_t topo_hash(const void* data, size_t len);
/* Same value on every process of this host (and IPC namespace); differs between hosts.
 * Built from the host name, the boot id and the IPC namespace; MONEL_HOST_ID overrides it. */
uint64_t topo_host_hash(void);
void topo_host_name(char* buf, size_t len);

#endif

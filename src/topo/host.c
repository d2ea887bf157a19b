/* SPDX-License-Identifier: BSD-3-Clause */
/* Host identity from the host name, the kernel boot id and the IPC/network namespaces, so that
 * network-namespace "hosts" on one machine count as different hosts; the machine (the cores a
 * rank shares) from the boot id alone. */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "util/param.h"
#include "topo/host.h"

uint64_t topo_hash(const void* data, size_t len) {
  const unsigned char* p = data;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

static size_t append_file(char* buf, size_t o, size_t cap, const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return o;
  size_t n = fread(buf + o, 1, cap - o - 1, f);
  fclose(f);
  return o + n;
}

static size_t append_link(char* buf, size_t o, size_t cap, const char* path) {
  ssize_t n = readlink(path, buf + o, cap - o - 1);
  return n > 0 ? o + (size_t)n : o;
}

uint64_t topo_host_hash(void) {
  const char* id = param_str(PARAM_HOST_ID);
  if (id[0] == '\0') id = param_str(PARAM_HOSTID); /* NCCL's name for it */
  if (id[0]) return topo_hash(id, strlen(id));
  char buf[1024];
  size_t o = 0;
  gethostname(buf, 256);
  o = strnlen(buf, 256);
  o = append_file(buf, o, sizeof buf, "/proc/sys/kernel/random/boot_id");
  o = append_link(buf, o, sizeof buf, "/proc/self/ns/ipc");
  o = append_link(buf, o, sizeof buf, "/proc/self/ns/net");
  return topo_hash(buf, o);
}

void topo_host_name(char* buf, size_t len) {
  if (gethostname(buf, len) != 0) snprintf(buf, len, "unknown");
  buf[len - 1] = '\0';
  char* dot = strchr(buf, '.');
  if (dot) *dot = '\0';
}

uint64_t topo_machine_hash(void) {
  char buf[256];
  size_t o = append_file(buf, 0, sizeof buf, "/proc/sys/kernel/random/boot_id");
  if (o == 0) {
    gethostname(buf, sizeof buf - 1);
    o = strnlen(buf, sizeof buf - 1);
  }
  return topo_hash(buf, o);
}

int topo_cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
  }
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

int topo_socket_threads(int cpus, int ranks_here) {
  if (ranks_here < 1) ranks_here = 1;
  return cpus / ranks_here >= TOPO_CORES_FOR_TWO ? 2 : 1;
}

int topo_doubling_from(int cpus, int ranks_here) {
  if (ranks_here < 1) ranks_here = 1;
  return cpus >= TOPO_CORES_FOR_CHAINS * ranks_here ? TOPO_DOUBLING_FROM : 0;
}

/* The CPU engine's private state and its algorithm runners. */
#ifndef MONEL_CPU_CPU_H
#define MONEL_CPU_CPU_H
#include "core/comm.h"
#include "cpu/fifo.h"
#include "transport/transport.h"

struct cpu_comm {
  size_t slot_size;
  int nslots;
  int ring_ready;
  struct conn ring_send, ring_recv;
};

ncclResult_t cpu_connect_pair(struct ncclComm* comm, int send_peer, struct conn* send,
                              int recv_peer, struct conn* recv);
ncclResult_t cpu_ring_allreduce(struct ncclComm* comm, const struct task* t);

#endif

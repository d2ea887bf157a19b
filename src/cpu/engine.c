/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU engine: runs a comm's operations on host memory with the calling thread, moving slots
 * through transport FIFOs and reducing on the CPU. An operation is complete when run() returns;
 * the stream argument is ignored. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "algo/ring.h"
#include "boot/boot.h"
#include "boot/tags.h"
#include "core/algo.h"
#include "util/check.h"
#include "core/comm.h"
#include "core/node_topo.h"
#include "util/param.h"
#include "cpu/cpu.h"
#include "proxy/proxy.h"
#include "util/dtype.h"

#define ONESHOT_EAGER_RANKS 8 /* see run_task */

static int shm_usable(const struct ncclComm* comm, int peer) {
  return param_int(PARAM_SHM_DISABLE) != 1 &&
         shm_transport.can_connect(&comm->peers[comm->rank], &comm->peers[peer]);
}

/* Shared memory within a host unless NCCL_SHM_DISABLE=1; the network otherwise (net_link: TCP or a
 * net plugin) (its progress thread is held by the comm until cpu_comm_free). */
static const struct transport* pick_transport(const struct ncclComm* comm, int peer) {
  const struct peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[peer];
  if (shm_usable(comm, peer)) return &shm_transport;
  if (net_socket_transport.can_connect(me, p) && proxy_acquire(comm) == ncclSuccess)
    return &net_socket_transport;
  return NULL;
}

/* -1: the peer is this process; 0: another host (its liveness shows on the connection); else
 * the pid to watch. A TCP connection reports the end of its peer itself, after anything the
 * peer sent before it ended (such as why it stopped): its peer is not watched. */
static int peer_pid(const struct ncclComm* comm, int peer) {
  const struct peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[peer];
  if (me->host_hash != p->host_hash) return 0;
  return me->pid == p->pid ? -1 : p->pid;
}

/* The network device of this rank (made at its first network connection): the nearest to its
 * CPUs, rotated over the ranks of its host, so that a host's ranks spread over its NICs. */
static ncclResult_t net_dev(struct ncclComm* comm, int* dev) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc->net_dev < 0) {
    int local = 0;
    for (int r = 0; r < comm->rank; r++)
      local += comm->peers[r].host_hash == comm->peers[comm->rank].host_hash;
    NCCLCHECK(node_topo_cpu_net_dev(local, &cc->net_dev));
    INFO(LOG_INIT | LOG_NET, "comm %p rank %d uses network device %d", (void*)comm, comm->rank,
         cc->net_dev);
  }
  *dev = cc->net_dev;
  return ncclSuccess;
}

ncclResult_t cpu_conn_prepare(struct ncclComm* comm, int peer, struct conn* c) {
  c->tr = pick_transport(comm, peer);
  if (c->tr == NULL) {
    WARN("rank %d cannot reach rank %d (host %s): shared memory does not apply and the TCP "
         "transport's progress thread could not start",
         comm->rank, peer, comm->peers[peer].host);
    return ncclSystemError;
  }
  c->peer = peer;
  c->peer_pid = peer_pid(comm, peer);
  if (c->tr != &shm_transport && c->peer_pid > 0) c->peer_pid = 0;
  c->key = boot_key(comm->boot);
  if (c->tr != &shm_transport) NCCLCHECK(net_dev(comm, &c->net_dev));
  return ncclSuccess;
}

/* One phase of cpu_connect (see cpu.h) on one link. */
static ncclResult_t connect_phase(struct ncclComm* comm, int phase, const struct cpu_link* l) {
  struct cpu_comm* cc = comm->engine_state;
  char desc[CONN_DESC_BYTES], ack = 1;
  if (phase == 1 && l->recv) {
    NCCLCHECK(cpu_conn_prepare(comm, l->peer, l->c));
    memset(desc, 0, sizeof desc);
    NCCLCHECK(l->c->tr->setup(l->c, cc->nslots, cc->slot_size, desc));
    NCCLCHECK(boot_send(comm->boot, l->peer, l->tag, desc, sizeof desc));
  } else if (phase == 2 && !l->recv) {
    NCCLCHECK(cpu_conn_prepare(comm, l->peer, l->c));
    NCCLCHECK(boot_recv(comm->boot, l->peer, l->tag, desc, sizeof desc));
    NCCLCHECK(l->c->tr->connect(l->c, desc));
    NCCLCHECK(boot_send(comm->boot, l->peer, l->tag + 1, &ack, 1));
  } else if (phase == 3 && l->recv) {
    NCCLCHECK(boot_recv(comm->boot, l->peer, l->tag + 1, &ack, 1));
    NCCLCHECK(l->c->tr->connected(l->c));
  } else {
    return ncclSuccess;
  }
  if (phase == 1) return ncclSuccess;
  if (l->prefault) fifo_prefault(l->c);
  if (l->ready) *l->ready = 1;
  return ncclSuccess;
}

ncclResult_t cpu_connect(struct ncclComm* comm, const struct cpu_link* links, int nlinks) {
  for (int phase = 1; phase <= 3; phase++)
    for (int i = 0; i < nlinks; i++)
      if (links[i].ready == NULL || !*links[i].ready)
        NCCLCHECK(connect_phase(comm, phase, &links[i]));
  return ncclSuccess;
}

ncclResult_t cpu_check_len(const struct wait_ctx* w, size_t got, size_t want, int from) {
  if (got == want) return ncclSuccess;
  WARN("%s #%llu on rank %d: received %zu bytes from rank %d where %zu were expected: the ranks "
       "were not given the same count and datatype",
       coll_name(w->task->coll), (unsigned long long)w->task->seq, w->comm->rank, got, from, want);
  return ncclInvalidUsage;
}

static ncclResult_t ensure_ring(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc->ring_ready || comm->nranks == 1) return ncclSuccess;
  /* Neighbours by ring position (comm->ring_order), not by rank. */
  int n = comm->nranks, pos = comm->ring_pos[comm->rank];
  int next = comm->ring_order[ring_next(pos, n)], prev = comm->ring_order[ring_prev(pos, n)];
  struct cpu_link links[2] = {
      {&cc->p2p_recv[prev], prev, 1, BOOT_TAG_CPU_RING, &cc->p2p_recv_ready[prev], 0},
      {&cc->p2p_send[next], next, 0, BOOT_TAG_CPU_RING, &cc->p2p_send_ready[next], 0}};
  NCCLCHECK(cpu_connect(comm, links, 2));
  cc->ring_send = &cc->p2p_send[next];
  cc->ring_recv = &cc->p2p_recv[prev];
  cc->ring_ready = 1;
  INFO(LOG_INIT | LOG_SHM,
       "comm %p rank %d ring connected: send to %d via %s, receive from %d, ring position %d",
       (void*)comm, comm->rank, next, cc->ring_send->tr->name, prev, pos);
  return ncclSuccess;
}

static ncclResult_t cpu_comm_init(struct ncclComm* comm) {
  struct cpu_comm* cc = NULL;
  NCCLCALLOC(cc, 1);
  cc->net_dev = -1;
  comm->engine_state = cc;
  NCCLCALLOC(cc->p2p_send, comm->nranks);
  NCCLCALLOC(cc->p2p_recv, comm->nranks);
  NCCLCALLOC(cc->p2p_send_ready, comm->nranks);
  NCCLCALLOC(cc->p2p_recv_ready, comm->nranks);
  NCCLCHECK(cpu_tree_init(comm));
  int64_t slot = param_int(PARAM_CPU_SLOT_SIZE), nslots = param_int(PARAM_CPU_SLOTS);
  if (slot < 4096) slot = 4096;
  if (nslots < 2) nslots = 2;
  if (nslots > FIFO_MAX_SLOTS) nslots = FIFO_MAX_SLOTS;
  cc->lost_rank = -1;
  /* The plan's figures: the network path when any pair of ranks talks over it. */
  comm->plan.path = PLAN_PATH_SHM;
  for (int p = 0; p < comm->nranks; p++)
    if (p != comm->rank && !shm_usable(comm, p)) comm->plan.path = PLAN_PATH_NET;
  comm->plan.p2p_channels = 1;
  cc->slot_size = (size_t)slot & ~(size_t)63;
  cc->nslots = (int)nslots;
  return ncclSuccess;
}

static ncclResult_t run_task(struct ncclComm* comm, struct task* t) {
  switch (t->coll) {
  case COLL_ALLREDUCE:
  case COLL_BROADCAST:
  case COLL_REDUCE: {
    enum algo_id algo = t->plan.algo; /* core/plan.c */
    /* Small comms on one host connect the one-shot mesh (shared memory) at their first
     * AllReduce, whatever it runs, so that the first small one does not pay for the setup;
     * across hosts it is connected when an operation first runs on it (descriptors). */
    if (t->coll == COLL_ALLREDUCE && comm->nranks <= ONESHOT_EAGER_RANKS &&
        comm->plan.path == PLAN_PATH_SHM)
      NCCLCHECK(cpu_oneshot_connect(comm));
    if (algo == ALGO_TREE) return cpu_tree_run(comm, t);
    if (algo == ALGO_ONESHOT) return cpu_oneshot_allreduce(comm, t);
    if (algo == ALGO_TWOSHOT) return cpu_twoshot_allreduce(comm, t);
    NCCLCHECK(ensure_ring(comm));
    return t->coll == COLL_ALLREDUCE ? cpu_ring_allreduce(comm, t) : cpu_ring_chain(comm, t);
  }
  case COLL_ALLGATHER:
  case COLL_REDUCESCATTER:
    NCCLCHECK(ensure_ring(comm)); /* the plan has only the ring for them */
    return cpu_ring_gather_scatter(comm, t);
  case COLL_ALLTOALL:
  case COLL_ALLTOALLV:
  case COLL_GATHER:
  case COLL_SCATTER:
  case COLL_SEND:
  case COLL_RECV:
    return cpu_p2p_run(comm, &t, 1);
  default:
    WARN("%s #%llu on rank %d: the CPU engine does not know this operation", coll_name(t->coll),
         (unsigned long long)t->seq, comm->rank);
    return ncclInvalidUsage;
  }
}

/* Close every connection so that peers waiting on this rank stop with an error, naming the rank
 * whose loss stopped this one if that is why. */
static void close_all(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc == NULL) return;
  int lost = __atomic_load_n(&cc->lost_rank, __ATOMIC_ACQUIRE);
  cpu_tree_close(comm, lost);
  for (int p = 0; cc->p2p_send && cc->p2p_recv && p < comm->nranks; p++) {
    fifo_close(&cc->p2p_send[p], lost);
    fifo_close(&cc->p2p_recv[p], lost);
  }
}

/* An operation that reported proxy events ends them (cpu/prof.h): res, or the error of waiting
 * for its sends. */
static ncclResult_t prof_done(struct ncclComm* comm, const struct task* t, ncclResult_t res) {
  struct cpu_comm* cc = comm->engine_state;
  if (__builtin_expect(cc->prof_conns == NULL, 1)) return res;
  ncclResult_t fin = cpu_prof_finish(comm, t, res == ncclSuccess);
  return res != ncclSuccess ? res : fin;
}

/* Collectives run in the order they were queued; the group's Send/Recv tasks then run together
 * in one progress loop (every rank runs the collectives first, so a p2p exchange never waits
 * behind a collective that the peer has not reached). */
static ncclResult_t cpu_run(struct ncclComm* comm, struct task* tasks, int ntasks) {
  ncclResult_t res = ncclSuccess;
  struct task** p2p = NULL;
  int np2p = 0;
  if (ntasks > 1 && (p2p = calloc((size_t)ntasks, sizeof *p2p)) == NULL) {
    WARN("%s #%llu on rank %d: out of host memory grouping %d operations", coll_name(tasks[0].coll),
         (unsigned long long)tasks[0].seq, comm->rank, ntasks);
    res = ncclSystemError;
    goto out;
  }
  for (int i = 0; i < ntasks; i++) {
    struct task* t = &tasks[i];
    if (ntasks > 1 && (t->coll == COLL_SEND || t->coll == COLL_RECV))
      p2p[np2p++] = t;
    else
      NCCLCHECKGOTO(prof_done(comm, t, run_task(comm, t)), res, out);
  }
  if (np2p) NCCLCHECKGOTO(prof_done(comm, p2p[0], cpu_p2p_run(comm, p2p, np2p)), res, out);
out:
  if (res == ncclRemoteError || res == ncclSystemError) {
    ncclResult_t none = ncclSuccess; /* the first error stays (a mismatch found meanwhile) */
    __atomic_compare_exchange_n(&comm->async_error, &none, res, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    close_all(comm);
  } else if (res != ncclSuccess) {
    close_all(comm); /* peers may be waiting on this rank's part of the operation */
  }
  for (int i = 0; i < ntasks; i++)
    if (tasks[i].vrows) task_release(&tasks[i]);
  free(p2p);
  return res;
}

static void cpu_abort(struct ncclComm* comm) {
  /* Our own waiters sleep at most MONEL_PEER_CHECK_MS and then see comm->abort_flag; the peers
   * see the closed FIFOs. */
  struct cpu_comm* cc = comm->engine_state;
  if (cc == NULL) return;
  close_all(comm);
}

/* The plan's fit (core/plan.h): across the network, OneShot and TwoShot connect every pair of
 * ranks, so beyond MONEL_NET_MESH_MAX ranks they run only when NCCL_ALGO leaves nothing else;
 * Ring and Tree keep the descriptors per rank flat as hosts are added. */
static struct plan_fit cpu_plan_fit(const struct ncclComm* comm, const struct task* t,
                                    const struct plan_row* row) {
  struct plan_fit f = {1, 0, 0, NULL};
  (void)t;
  if (comm->plan.path == PLAN_PATH_NET &&
      (row->algo == ALGO_ONESHOT || row->algo == ALGO_TWOSHOT) &&
      comm->nranks > param_int(PARAM_NET_MESH_MAX))
    f.crossover = 1; /* at 0 bytes: only when forced */
  return f;
}

static void cpu_comm_free(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc == NULL) return;
  cpu_tree_free(comm);
  for (int p = 0; cc->p2p_send && p < comm->nranks; p++)
    if (cc->p2p_send[p].tr) cc->p2p_send[p].tr->free(&cc->p2p_send[p]);
  for (int p = 0; cc->p2p_recv && p < comm->nranks; p++)
    if (cc->p2p_recv[p].tr) cc->p2p_recv[p].tr->free(&cc->p2p_recv[p]);
  free(cc->p2p_send);
  free(cc->p2p_recv);
  free(cc->p2p_send_ready);
  free(cc->p2p_recv_ready);
  free(cc);
  comm->engine_state = NULL;
  proxy_release(comm); /* after the TCP connections are gone */
}

const struct engine cpu_engine = {
    .name = "cpu",
    .caps = cpu_caps,
    .ncaps = CPU_NCAPS,
    .plan_fit = cpu_plan_fit,
    .comm_init = cpu_comm_init,
    .run = cpu_run,
    .abort = cpu_abort,
    .comm_free = cpu_comm_free,
};

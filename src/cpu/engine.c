/* The CPU engine: runs a comm's operations on host memory with the calling thread, moving slots
 * through transport FIFOs and reducing on the CPU. An operation is complete when run() returns;
 * the stream argument is ignored. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "algo/ring.h"
#include "boot/boot.h"
#include "core/algo.h"
#include "util/check.h"
#include "core/comm.h"
#include "util/param.h"
#include "cpu/cpu.h"
#include "proxy/proxy.h"
#include "util/dtype.h"

#define TAG_CONN            0x434f4e00 /* + 0: descriptor, + 1: ack */
#define ONESHOT_EAGER_RANKS 8          /* see run_task */

/* Shared memory within a host unless NCCL_SHM_DISABLE=1; the network otherwise (net_link: TCP or a
 * net plugin) (its progress thread is held by the comm until cpu_comm_free). */
static const struct transport* pick_transport(const struct ncclComm* comm, int peer) {
  const struct peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[peer];
  if (param_int(PARAM_SHM_DISABLE) != 1 && shm_transport.can_connect(me, p)) return &shm_transport;
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
  return ncclSuccess;
}

/* Connect me -> send_peer and recv_peer -> me (either may be -1). Every rank of the comm that
 * takes part calls this with matching pairs. */
ncclResult_t cpu_connect_pair(struct ncclComm* comm, int send_peer, struct conn* send,
                              int recv_peer, struct conn* recv) {
  struct cpu_comm* cc = comm->engine_state;
  char desc[CONN_DESC_BYTES];
  char ack = 1;
  if (recv_peer >= 0) {
    NCCLCHECK(cpu_conn_prepare(comm, recv_peer, recv));
    memset(desc, 0, sizeof desc);
    NCCLCHECK(recv->tr->setup(recv, cc->nslots, cc->slot_size, desc));
    NCCLCHECK(boot_send(comm->boot, recv_peer, TAG_CONN, desc, sizeof desc));
  }
  if (send_peer >= 0) {
    NCCLCHECK(cpu_conn_prepare(comm, send_peer, send));
    NCCLCHECK(boot_recv(comm->boot, send_peer, TAG_CONN, desc, sizeof desc));
    NCCLCHECK(send->tr->connect(send, desc));
    NCCLCHECK(boot_send(comm->boot, send_peer, TAG_CONN + 1, &ack, 1));
  }
  if (recv_peer >= 0) {
    NCCLCHECK(boot_recv(comm->boot, recv_peer, TAG_CONN + 1, &ack, 1));
    NCCLCHECK(recv->tr->connected(recv));
  }
  return ncclSuccess;
}

static ncclResult_t ensure_ring(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc->ring_ready || comm->nranks == 1) return ncclSuccess;
  /* Neighbours by ring position (comm->ring_order), not by rank. */
  int n = comm->nranks, pos = comm->ring_pos[comm->rank];
  int next = comm->ring_order[ring_next(pos, n)], prev = comm->ring_order[ring_prev(pos, n)];
  NCCLCHECK(cpu_connect_pair(comm, next, &cc->ring_send, prev, &cc->ring_recv));
  cc->ring_ready = 1;
  INFO(LOG_INIT | LOG_SHM,
       "comm %p rank %d ring connected: send to %d via %s, receive from %d, ring position %d",
       (void*)comm, comm->rank, next, cc->ring_send.tr->name, prev, pos);
  return ncclSuccess;
}

static ncclResult_t cpu_comm_init(struct ncclComm* comm) {
  struct cpu_comm* cc = NULL;
  NCCLCALLOC(cc, 1);
  comm->engine_state = cc;
  NCCLCALLOC(cc->p2p_send, comm->nranks);
  NCCLCALLOC(cc->p2p_recv, comm->nranks);
  NCCLCALLOC(cc->p2p_send_ready, comm->nranks);
  NCCLCALLOC(cc->p2p_recv_ready, comm->nranks);
  int64_t slot = param_int(PARAM_CPU_SLOT_SIZE), nslots = param_int(PARAM_CPU_SLOTS);
  if (slot < 4096) slot = 4096;
  if (nslots < 2) nslots = 2;
  if (nslots > FIFO_MAX_SLOTS) nslots = FIFO_MAX_SLOTS;
  cc->lost_rank = -1;
  cc->chosen.coll = -1;
  cc->slot_size = (size_t)slot & ~(size_t)63;
  cc->nslots = (int)nslots;
  return ncclSuccess;
}

/* algo_choose, remembering its last answer. */
static ncclResult_t choose(struct ncclComm* comm, const struct task* t, enum algo_id* algo) {
  struct cpu_comm* cc = comm->engine_state;
  size_t bytes = t->count * dtype_size(t->dtype);
  if (cc->chosen.coll == (int)t->coll && cc->chosen.bytes == bytes) {
    *algo = cc->chosen.algo;
    return ncclSuccess;
  }
  NCCLCHECK(algo_choose(comm, t, algo));
  cc->chosen.coll = (int)t->coll;
  cc->chosen.bytes = bytes;
  cc->chosen.algo = *algo;
  return ncclSuccess;
}

static ncclResult_t run_task(struct ncclComm* comm, struct task* t) {
  switch (t->coll) {
  case COLL_ALLREDUCE:
  case COLL_BROADCAST:
  case COLL_REDUCE: {
    enum algo_id algo;
    NCCLCHECK(choose(comm, t, &algo));
    /* Small comms connect the one-shot mesh at their first AllReduce, whatever it runs, so that
     * the first small one does not pay for the setup. */
    if (t->coll == COLL_ALLREDUCE && comm->nranks <= ONESHOT_EAGER_RANKS)
      NCCLCHECK(cpu_oneshot_connect(comm));
    if (algo == ALGO_TREE) return cpu_tree_run(comm, t);
    if (algo == ALGO_ONESHOT) return cpu_oneshot_allreduce(comm, t);
    if (algo == ALGO_TWOSHOT) return cpu_twoshot_allreduce(comm, t);
    NCCLCHECK(ensure_ring(comm));
    return t->coll == COLL_ALLREDUCE ? cpu_ring_allreduce(comm, t) : cpu_ring_chain(comm, t);
  }
  case COLL_ALLGATHER:
  case COLL_REDUCESCATTER: {
    enum algo_id algo;
    NCCLCHECK(choose(comm, t, &algo)); /* fails if NCCL_ALGO excludes Ring */
    NCCLCHECK(ensure_ring(comm));
    return cpu_ring_gather_scatter(comm, t);
  }
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
  fifo_close(&cc->ring_send, lost);
  fifo_close(&cc->ring_recv, lost);
  cpu_tree_close(comm, lost);
  for (int p = 0; cc->p2p_send && cc->p2p_recv && p < comm->nranks; p++) {
    fifo_close(&cc->p2p_send[p], lost);
    fifo_close(&cc->p2p_recv[p], lost);
  }
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
      NCCLCHECKGOTO(run_task(comm, t), res, out);
  }
  if (np2p) NCCLCHECKGOTO(cpu_p2p_run(comm, p2p, np2p), res, out);
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

static void cpu_comm_free(struct ncclComm* comm) {
  struct cpu_comm* cc = comm->engine_state;
  if (cc == NULL) return;
  if (cc->ring_send.tr) cc->ring_send.tr->free(&cc->ring_send);
  if (cc->ring_recv.tr) cc->ring_recv.tr->free(&cc->ring_recv);
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
    .comm_init = cpu_comm_init,
    .run = cpu_run,
    .abort = cpu_abort,
    .comm_free = cpu_comm_free,
};

/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank of the check of point-to-point connections made at first use (tests/gpu/lazy.sh),
 * started by monelrun with every rank its own fake host, so that every pair talks over the network
 * (on one GPU the ranks share it: rank r uses GPU MONEL_LOCAL_RANK mod count).
 *
 * p2p: descriptors (/proc/self/fd) before init and after it, then after each step, every message
 * small (4 KB: the TCP network's helper threads, started by a connection's first message above
 * 64 KB, stay out of the count), every result checked byte for byte:
 *   1. Send/Recv with rank ^ 1          (a new peer with MONEL_P2P_CONNECT=lazy)
 *   2. the same again                   (no new peer)
 *   3. Send/Recv with rank ^ 2, captured in a CUDA graph at its first use, replayed 3 times with
 *      new data each time               (a new peer, connected while the stream is captured)
 *   4. AlltoAll                         (the peers left: rank ^ 3 on 4 ranks)
 *   5. AlltoAll again                   (no new peer)
 * then large messages (no descriptor count): Send/Recv of 4 MB + 3 with rank ^ 1 and rank ^ 2,
 * AlltoAll of 1 MB + 1 per peer, Gather and Scatter of 256 KB + 5 from every root, the graph of
 * step 3 replayed with 4 MB + 3. It prints
 *   "lazy-fds rank R/N mode M: before init B, after init I, steps S1 S2 S3 S4 S5"
 * (the descriptors each step added) and checks what holds in both modes (steps 2 and 5 add none)
 * and in its mode: eager adds none at any step; lazy adds some at a step with a new peer, none at
 * one without, and about as many for each new peer (steps 1, 3 and 4 on 4 ranks each connect one:
 * within BOOT_SLACK, the bootstrap's connection each way with a peer it never spoke to).
 * tests/gpu/lazy.sh compares the runs at 2 and 4 ranks (flat after init) and reads the logs.
 *
 * colls: the communicator's first operation is an AllReduce of 8 floats (the one hop across
 * hosts, channel 0 alone: with every peer at once, or with the peers of recursive doubling), then
 * an AlltoAll of 1 MB + 1 per peer (the other channels of every peer) and the AllReduce again; tree
 * (run with NCCL_ALGO forcing the tree for AllReduce, Broadcast and Reduce): AllReduce, then
 * Broadcast and Reduce from every root, 1 MB + 1 floats (each root's trees bring their parents and
 * children); every result checked exactly.
 *
 * zero: the communicator's first operation is an AlltoAll with a per-call NCCL_CTA_POLICY_ZERO,
 * which the copy-engine path cannot run across hosts: every rank refuses it (ncclInvalidUsage),
 * after the first use has connected the peers it names on both ends alike; then an AlltoAll is
 * checked exactly over those connections.
 *
 * Every wait is bounded (an alarm of 120 s per step). Exit 0 when every check held; prints PASS or
 * FAIL per rank. Usage: monelrun -n N --fake-hosts N gpu_test_gpu_lazy p2p|colls|tree|zero */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu_check.h"

#define SMALL      4096
#define LARGE      ((4 << 20) + 3)
#define A2A_LARGE  ((1 << 20) + 1)
#define ROOTED     ((256 << 10) + 5)
#define BOOT_SLACK 2
#define NSTEPS     5

static int rank, n;
static ncclComm_t comm;
static cudaStream_t st;
static unsigned char *sendb, *recvb, *host;
static size_t cap;
static char current[96];
static int failed;

static void watchdog(int sig) {
  (void)sig;
  char msg[200];
  int len =
      snprintf(msg, sizeof msg, "FAIL rank %d: %s did not finish within 120 s\n", rank, current);
  if (write(1, msg, (size_t)len) < 0) _exit(3);
  _exit(2);
}

static void begin(const char* what) {
  snprintf(current, sizeof current, "%s", what);
  alarm(120);
}

static int count_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  int k = 0;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) k += e->d_name[0] != '.';
  if (d) closedir(d);
  return k - 1; /* the directory stream's own descriptor */
}

/* Byte i of what rank src sends to rank dst in case k. */
static unsigned char pat(int k, int src, int dst, size_t i) {
  return (unsigned char)(k * 17 + src * 31 + dst * 7 + i * 13 + (i >> 8) * 5);
}

static void fill(unsigned char* dev, size_t off, size_t bytes, int k, int src, int dst) {
  for (size_t i = 0; i < bytes; i++) host[i] = pat(k, src, dst, i);
  CK(cudaMemcpy(dev + off, host, bytes, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());
}

static void expect(const unsigned char* dev, size_t off, size_t bytes, int k, int src, int dst) {
  CK(cudaMemcpy(host, dev + off, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < bytes; i++)
    if (host[i] != pat(k, src, dst, i)) {
      printf("FAIL rank %d: %s: data from rank %d, byte %zu of %zu is %u, expected %u\n", rank,
             current, src, i, bytes, host[i], pat(k, src, dst, i));
      failed = 1;
      return;
    }
}

static void sendrecv_enqueue(int peer, size_t bytes) {
  NK(ncclGroupStart());
  NK(ncclSend(sendb, bytes, ncclUint8, peer, comm, st));
  NK(ncclRecv(recvb, bytes, ncclUint8, peer, comm, st));
  NK(ncclGroupEnd());
}

static void sendrecv(int peer, size_t bytes, int k) {
  if (peer >= n) return;
  fill(sendb, 0, bytes, k, rank, peer);
  sendrecv_enqueue(peer, bytes);
  CK(cudaStreamSynchronize(st));
  expect(recvb, 0, bytes, k, peer, rank);
}

/* Send/Recv with peer captured in a graph (the first use of the pair when the graph is made
 * first), replayed `replays` times with new data each time. */
static void graph_sendrecv(int peer, size_t bytes, int k, int replays, cudaGraphExec_t* exec) {
  if (peer >= n) return;
  if (*exec == NULL) {
    cudaGraph_t gr;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    sendrecv_enqueue(peer, bytes);
    CK(cudaStreamEndCapture(st, &gr));
    CK(cudaGraphInstantiate(exec, gr, 0));
    CK(cudaGraphDestroy(gr));
  }
  for (int rep = 0; rep < replays; rep++) {
    fill(sendb, 0, bytes, k + rep, rank, peer);
    CK(cudaMemset(recvb, 0, bytes));
    CK(cudaGraphLaunch(*exec, st));
    CK(cudaStreamSynchronize(st));
    expect(recvb, 0, bytes, k + rep, peer, rank);
  }
}

static void alltoall(size_t bytes, int k) {
  for (int p = 0; p < n; p++) fill(sendb, (size_t)p * bytes, bytes, k, rank, p);
  NK(ncclAlltoAll(sendb, recvb, bytes, ncclUint8, comm, st));
  CK(cudaStreamSynchronize(st));
  for (int p = 0; p < n; p++) expect(recvb, (size_t)p * bytes, bytes, k, p, rank);
}

static void gather_scatter(size_t bytes, int k) {
  for (int root = 0; root < n; root++) {
    fill(sendb, 0, bytes, k + root, rank, root);
    NK(ncclGather(sendb, recvb, bytes, ncclUint8, root, comm, st));
    CK(cudaStreamSynchronize(st));
    if (rank == root)
      for (int p = 0; p < n; p++) expect(recvb, (size_t)p * bytes, bytes, k + root, p, root);
    if (rank == root)
      for (int p = 0; p < n; p++) fill(sendb, (size_t)p * bytes, bytes, k + n + root, root, p);
    NK(ncclScatter(sendb, recvb, bytes, ncclUint8, root, comm, st));
    CK(cudaStreamSynchronize(st));
    expect(recvb, 0, bytes, k + n + root, root, rank);
  }
}

static void check(int ok, const char* what) {
  if (ok) return;
  printf("FAIL rank %d: %s\n", rank, what);
  failed = 1;
}

static void run_p2p(int eager, int before, int init) {
  static const char* names[NSTEPS] = {"Send/Recv with rank^1", "Send/Recv with rank^1 again",
                                      "Send/Recv with rank^2 in a graph", "AlltoAll",
                                      "AlltoAll again"};
  int gain[NSTEPS], last = count_fds();
  cudaGraphExec_t exec = NULL;
  for (int s = 0; s < NSTEPS; s++) {
    begin(names[s]);
    if (s <= 1) sendrecv(rank ^ 1, SMALL, s);
    if (s == 2) graph_sendrecv(rank ^ 2, SMALL, 10, 3, &exec);
    if (s >= 3) alltoall(SMALL, 20 + s);
    int now = count_fds();
    gain[s] = now - last;
    last = now;
  }
  printf("lazy-fds rank %d/%d mode %s: before init %d, after init %d, steps %d %d %d %d %d\n", rank,
         n, eager ? "eager" : "lazy", before, init, gain[0], gain[1], gain[2], gain[3], gain[4]);
  check(gain[1] == 0 && gain[4] == 0, "a step with no new peer added descriptors");
  int fresh[NSTEPS] = {(rank ^ 1) < n, 0, (rank ^ 2) < n, (rank ^ 3) < n, 0}, lo = 1 << 30, hi = 0;
  for (int s = 0; s < NSTEPS; s++) {
    if (eager || !fresh[s]) {
      check(gain[s] == 0, eager ? "eager: a step added descriptors (all were made at init)"
                                : "lazy: a step with no new peer added descriptors");
      continue;
    }
    check(gain[s] > 0, "lazy: the first use of a peer added no descriptor");
    lo = gain[s] < lo ? gain[s] : lo;
    hi = gain[s] > hi ? gain[s] : hi;
  }
  check(hi == 0 || hi - lo <= BOOT_SLACK, "lazy: new peers cost different numbers of descriptors");
  begin("large Send/Recv, AlltoAll, Gather, Scatter, the graph again");
  sendrecv(rank ^ 1, LARGE, 30);
  sendrecv(rank ^ 2, LARGE, 31);
  alltoall(A2A_LARGE, 32);
  gather_scatter(ROOTED, 40);
  if (exec != NULL) { /* made for SMALL: a new capture of the same pair for the large size */
    CK(cudaGraphExecDestroy(exec));
    exec = NULL;
    graph_sendrecv(rank ^ 2, LARGE, 60, 2, &exec);
    CK(cudaGraphExecDestroy(exec));
  }
}

/* Element i of rank r's input: small integers, so that every order of summation gives the same
 * bits. */
static float in_val(int r, size_t i) {
  return (float)((int)((i * 7 + (size_t)r * 3) % 11) - 5);
}

static void fill_floats(size_t count, int r) {
  float* h = (float*)host;
  for (size_t i = 0; i < count; i++) h[i] = in_val(r, i);
  CK(cudaMemcpy(sendb, h, count * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());
}

/* out[i] must be the sum over ranks of in_val (sum) or root's in_val (!sum). */
static void expect_floats(size_t count, int sum, int root) {
  float* h = (float*)host;
  CK(cudaMemcpy(h, recvb, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want += sum ? in_val(r, i) : (r == root ? in_val(r, i) : 0);
    if (h[i] != want) {
      printf("FAIL rank %d: %s: element %zu is %g, expected %g\n", rank, current, i, h[i], want);
      failed = 1;
      return;
    }
  }
}

static void run_colls(int tree) {
  size_t count = tree ? (1 << 20) + 1 : 8;
  begin("AllReduce on a fresh communicator");
  fill_floats(count, rank);
  NK(ncclAllReduce(sendb, recvb, count, ncclFloat32, ncclSum, comm, st));
  CK(cudaStreamSynchronize(st));
  expect_floats(count, 1, 0);
  if (!tree) {
    /* The one hop connected channel 0 alone with each peer: an AlltoAll large enough for every
     * channel connects the others, and the one hop still runs on channel 0 after it. */
    begin("AlltoAll after the one hop");
    alltoall(A2A_LARGE, 40);
    begin("AllReduce after the AlltoAll");
    fill_floats(count, rank);
    NK(ncclAllReduce(sendb, recvb, count, ncclFloat32, ncclSum, comm, st));
    CK(cudaStreamSynchronize(st));
    expect_floats(count, 1, 0);
  }
  for (int root = 0; tree && root < n; root++) {
    begin("Broadcast and Reduce");
    fill_floats(count, rank);
    NK(ncclBroadcast(sendb, recvb, count, ncclFloat32, root, comm, st));
    CK(cudaStreamSynchronize(st));
    expect_floats(count, 0, root);
    NK(ncclReduce(sendb, recvb, count, ncclFloat32, ncclSum, root, comm, st));
    CK(cudaStreamSynchronize(st));
    if (rank == root) expect_floats(count, 1, root);
  }
  printf("lazy-colls rank %d/%d: %s checked\n", rank, n,
         tree ? "AllReduce, Broadcast and Reduce on the tree"
              : "an 8-float AllReduce, an AlltoAll and the AllReduce again");
}

static void run_zero(void) {
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  begin("AlltoAll with a per-call NCCL_CTA_POLICY_ZERO");
  for (int p = 0; p < n; p++) fill(sendb, (size_t)p * SMALL, SMALL, 50, rank, p);
  ncclResult_t res = ncclAlltoAllConfig(sendb, recvb, SMALL, ncclUint8, comm, st, &cfg);
  check(res == ncclInvalidUsage,
        "the AlltoAll with NCCL_CTA_POLICY_ZERO across hosts was not refused");
  CK(cudaStreamSynchronize(st));
  begin("AlltoAll after the refused one");
  alltoall(SMALL, 51);
  printf("lazy-zero rank %d/%d: the AlltoAll with NCCL_CTA_POLICY_ZERO gave %s, the next one "
         "checked\n",
         rank, n, ncclGetErrorString(res));
}

int main(int argc, char** argv) {
  const char *r = getenv("MONEL_RANK"), *nr = getenv("MONEL_NRANKS");
  const char *lr = getenv("MONEL_LOCAL_RANK"), *mode = getenv("MONEL_P2P_CONNECT");
  if (argc != 2 || r == NULL || nr == NULL ||
      (strcmp(argv[1], "p2p") && strcmp(argv[1], "colls") && strcmp(argv[1], "tree") &&
       strcmp(argv[1], "zero"))) {
    fprintf(stderr, "usage: monelrun -n N --fake-hosts N %s p2p|colls|tree|zero\n", argv[0]);
    return 2;
  }
  rank = atoi(r), n = atoi(nr);
  int ndev = 0, eager = mode != NULL && strcmp(mode, "eager") == 0;
  signal(SIGALRM, watchdog);
  CK(cudaGetDeviceCount(&ndev));
  CK(cudaSetDevice((lr ? atoi(lr) : rank) % ndev));
  cap = (size_t)n * A2A_LARGE > LARGE ? (size_t)n * A2A_LARGE : LARGE;
  if ((size_t)n * ROOTED > cap) cap = (size_t)n * ROOTED;
  if (cap < ((1 << 20) + 1) * sizeof(float)) cap = ((1 << 20) + 1) * sizeof(float);
  CK(cudaMalloc((void**)&sendb, cap));
  CK(cudaMalloc((void**)&recvb, cap));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  host = malloc(cap);
  if (host == NULL) return 1;
  ncclUniqueId id;
  begin("init");
  int before = count_fds();
  NK(ncclGetUniqueId(&id)); /* with NCCL_COMM_ID (monelrun), every rank gets the same id */
  NK(ncclCommInitRank(&comm, n, id, rank));
  int init = count_fds();
  if (strcmp(argv[1], "p2p") == 0)
    run_p2p(eager, before, init);
  else if (strcmp(argv[1], "zero") == 0)
    run_zero();
  else
    run_colls(strcmp(argv[1], "tree") == 0);
  begin("destroy");
  NK(ncclCommDestroy(comm));
  alarm(0);
  printf("%s rank %d: %s (%s)\n", failed ? "FAIL" : "PASS", rank, argv[1],
         eager ? "eager" : "lazy");
  return failed;
}

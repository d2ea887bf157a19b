/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point on GPUs, checked byte for byte: AlltoAll, AlltoAllv (random counts with zeros),
 * Gather and Scatter (every root, in place and out of place), Send/Recv patterns in one group
 * (ring, all pairs with self, many messages per pair: more than one launch holds), a group over
 * two streams, and an AlltoAll captured in a CUDA graph and replayed. One thread drives every
 * GPU (ncclCommInitAll). Usage: test_gpu_p2p. Prints PASS/FAIL/SKIP. */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu_check.h"
#include "monel.h"

static int n;
static ncclComm_t comms[MAXDEV];
static cudaStream_t streams[MAXDEV], side[MAXDEV];
static unsigned char *sendb[MAXDEV], *recvb[MAXDEV], *host;
static size_t cap;
static char current[128]; /* the case running, for the watchdog */

static void watchdog(int sig) {
  (void)sig;
  char msg[200];
  int len =
      snprintf(msg, sizeof msg, "FAIL test_gpu_p2p: %s did not finish within 60 s\n", current);
  if (write(1, msg, (size_t)len) < 0) _exit(3);
  _exit(2);
}

/* Start case `what`: name it for the watchdog and give it 60 s. */
static void begin(const char* what) {
  snprintf(current, sizeof current, "%s", what);
  alarm(60);
}

/* The byte at index i of what rank src sends to rank dst in case k. */
static unsigned char pat(int k, int src, int dst, size_t i) {
  return (unsigned char)(k * 17 + src * 31 + dst * 7 + i * 13 + (i >> 8) * 5);
}

static void fill(int r, unsigned char* dev, size_t off, size_t bytes, int k, int src, int dst) {
  for (size_t i = 0; i < bytes; i++) host[i] = pat(k, src, dst, i);
  CK(cudaSetDevice(r));
  CK(cudaMemcpy(dev + off, host, bytes, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize()); /* pageable copies may still be in flight when cudaMemcpy returns */
}

static int check(const char* what, int r, const unsigned char* dev, size_t off, size_t bytes, int k,
                 int src, int dst) {
  CK(cudaSetDevice(r));
  CK(cudaMemcpy(host, dev + off, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < bytes; i++)
    if (host[i] != pat(k, src, dst, i)) {
      printf("FAIL %s: rank %d, data from rank %d, byte %zu of %zu: got %u want %u\n", what, r, src,
             i, bytes, host[i], pat(k, src, dst, i));
      return 1;
    }
  return 0;
}

static void sync_all(void) {
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    CK(cudaStreamSynchronize(streams[r]));
    CK(cudaStreamSynchronize(side[r]));
  }
}

static void clear_recv(void) {
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    CK(cudaMemset(recvb[r], 0x5a, cap));
    CK(cudaDeviceSynchronize());
  }
}

static int alltoall(ncclDataType_t dt, size_t count, int k, int graph) {
  size_t es = dtype_size(dt), bytes = count * es;
  char what[96];
  snprintf(what, sizeof what, "AlltoAll %s count %zu%s", dtype_name(dt), count,
           graph ? " (graph)" : "");
  begin(what);
  clear_recv();
  for (int r = 0; r < n; r++)
    for (int p = 0; p < n; p++) fill(r, sendb[r], p * bytes, bytes, k, r, p);
  cudaGraphExec_t exec[MAXDEV];
  if (graph) {
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeThreadLocal));
    }
  }
  NK(ncclGroupStart());
  for (int r = 0; r < n; r++) NK(ncclAlltoAll(sendb[r], recvb[r], count, dt, comms[r], streams[r]));
  NK(ncclGroupEnd());
  if (graph) {
    cudaGraph_t gr[MAXDEV];
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaStreamEndCapture(streams[r], &gr[r]));
    }
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaGraphInstantiate(&exec[r], gr[r], 0));
      CK(cudaGraphDestroy(gr[r]));
    }
    for (int rep = 0; rep < 3; rep++)
      for (int r = 0; r < n; r++) {
        CK(cudaSetDevice(r));
        CK(cudaGraphLaunch(exec[r], streams[r]));
      }
  }
  sync_all();
  int fails = 0;
  for (int r = 0; r < n && !fails; r++)
    for (int p = 0; p < n && !fails; p++)
      fails += check(what, r, recvb[r], p * bytes, bytes, k, p, r);
  if (graph)
    for (int r = 0; r < n; r++) CK(cudaGraphExecDestroy(exec[r]));
  return fails;
}

/* AlltoAllv: rank r sends cnt(r, p) elements to p; zeros included. */
static size_t vcount(int k, int r, int p) {
  unsigned v = (unsigned)(k * 7 + r * 5 + p * 3) % 6;
  return v == 0 ? 0 : (size_t)v * 1000 + (size_t)(r + p);
}

static int alltoallv(ncclDataType_t dt, int k) {
  size_t es = dtype_size(dt);
  size_t sc[MAXDEV][MAXDEV], sd[MAXDEV][MAXDEV], rc[MAXDEV][MAXDEV], rd[MAXDEV][MAXDEV];
  char what[96];
  snprintf(what, sizeof what, "AlltoAllv %s case %d", dtype_name(dt), k);
  begin(what);
  clear_recv();
  for (int r = 0; r < n; r++) {
    size_t so = 0, ro = 0;
    for (int p = 0; p < n; p++) {
      sc[r][p] = vcount(k, r, p), sd[r][p] = so, so += sc[r][p] + 3; /* gaps between blocks */
      rc[r][p] = vcount(k, p, r), rd[r][p] = ro, ro += rc[r][p] + 1;
      fill(r, sendb[r], sd[r][p] * es, sc[r][p] * es, k, r, p);
    }
  }
  /* The four n x n matrices (row i describes rank i), identical on every rank. */
  size_t msc[MAXDEV * MAXDEV], msd[MAXDEV * MAXDEV], mrc[MAXDEV * MAXDEV], mrd[MAXDEV * MAXDEV];
  for (int r = 0; r < n; r++)
    for (int p = 0; p < n; p++) {
      msc[r * n + p] = sc[r][p], msd[r * n + p] = sd[r][p];
      mrc[r * n + p] = rc[r][p], mrd[r * n + p] = rd[r][p];
    }
  NK(ncclGroupStart());
  for (int r = 0; r < n; r++)
    NK(ncclAlltoAllv(sendb[r], msc, msd, recvb[r], mrc, mrd, NULL, 0, dt, comms[r], streams[r]));
  NK(ncclGroupEnd());
  sync_all();
  int fails = 0;
  for (int r = 0; r < n && !fails; r++)
    for (int p = 0; p < n && !fails; p++)
      fails += check(what, r, recvb[r], rd[r][p] * es, rc[r][p] * es, k, p, r);
  return fails;
}

static int rooted(int scatter, size_t count, int root, int inplace, int k) {
  ncclDataType_t dt = ncclFloat32;
  size_t bytes = count * 4;
  char what[96];
  snprintf(what, sizeof what, "%s root %d count %zu %s", scatter ? "Scatter" : "Gather", root,
           count, inplace ? "in-place" : "out-of-place");
  begin(what);
  clear_recv();
  for (int r = 0; r < n; r++) {
    if (scatter && r == root) {
      for (int p = 0; p < n; p++) fill(r, inplace ? recvb[r] : sendb[r], p * bytes, bytes, k, r, p);
    } else if (!scatter) {
      fill(r, inplace && r == root ? recvb[r] : sendb[r], inplace && r == root ? r * bytes : 0,
           bytes, k, r, root);
    }
  }
  NK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    unsigned char *s = sendb[r], *d = recvb[r];
    if (scatter) {
      if (inplace && r == root) s = recvb[r], d = recvb[r] + r * bytes;
      NK(ncclScatter(s, d, count, dt, root, comms[r], streams[r]));
    } else {
      if (inplace && r == root) s = recvb[r] + r * bytes;
      NK(ncclGather(s, d, count, dt, root, comms[r], streams[r]));
    }
  }
  NK(ncclGroupEnd());
  sync_all();
  int fails = 0;
  for (int r = 0; r < n && !fails; r++) {
    if (scatter)
      fails += check(what, r, recvb[r], inplace && r == root ? r * bytes : 0, bytes, k, root, r);
    else if (r == root)
      for (int p = 0; p < n && !fails; p++)
        fails += check(what, r, recvb[r], p * bytes, bytes, k, p, root);
  }
  return fails;
}

/* Send/Recv: every rank sends nmsg messages of `bytes` to each peer listed by dist (rank + d for
 * d in dists), including itself when d == 0; message j lands at offset j * stride. */
static int sendrecv(const char* what, const int* dists, int nd, int nmsg, size_t bytes,
                    int two_streams, int k) {
  size_t stride = bytes + 16;
  begin(what);
  clear_recv();
  for (int r = 0; r < n; r++)
    for (int di = 0; di < nd; di++)
      for (int j = 0; j < nmsg; j++)
        fill(r, sendb[r], ((size_t)di * nmsg + j) * stride, bytes, k + j, r, (r + dists[di]) % n);
  NK(ncclGroupStart());
  for (int r = 0; r < n; r++)
    for (int di = 0; di < nd; di++) {
      int to = (r + dists[di]) % n, from = (r - dists[di] % n + n) % n;
      for (int j = 0; j < nmsg; j++) {
        size_t off = ((size_t)di * nmsg + j) * stride;
        cudaStream_t s = two_streams && (j & 1) ? side[r] : streams[r];
        NK(ncclSend(sendb[r] + off, bytes, ncclUint8, to, comms[r], s));
        NK(ncclRecv(recvb[r] + off, bytes, ncclUint8, from, comms[r], s));
      }
    }
  NK(ncclGroupEnd());
  sync_all();
  int fails = 0;
  for (int r = 0; r < n && !fails; r++)
    for (int di = 0; di < nd && !fails; di++) {
      int from = (r - dists[di] % n + n) % n;
      for (int j = 0; j < nmsg && !fails; j++)
        fails += check(what, r, recvb[r], ((size_t)di * nmsg + j) * stride, bytes, k + j, from, r);
    }
  return fails;
}

static int report(const char* name, int cases, int fails) {
  printf("%s %s: %d cases on %d GPUs, %d failures\n", fails ? "FAIL" : "PASS", name, cases, n,
         fails);
  return fails;
}

int main(void) {
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("SKIP no GPU\n");
    return 0;
  }
  if (n > MAXDEV) n = MAXDEV;
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, watchdog);
  NK(ncclCommInitAll(comms, n, NULL));
  cap = ((size_t)(1u << 20) + 3) * 8 * (size_t)n + (1u << 20);
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    CK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&side[r], cudaStreamNonBlocking));
    CK(cudaMalloc((void**)&sendb[r], cap));
    CK(cudaMalloc((void**)&recvb[r], cap));
  }
  host = malloc(cap);
  int total = 0, k = 1, fails = 0, cases = 0;
  const ncclDataType_t dts[4] = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64};
  const size_t counts[5] = {0, 1, 1023, 65536, (1u << 20) + 3};
  for (int t = 0; t < 4; t++)
    for (int c = 0; c < 5; c++, cases++) fails += alltoall(dts[t], counts[c], k++, 0);
  fails += alltoall(ncclFloat32, 1023, k++, 1), cases++;
  fails += alltoall(ncclFloat32, (1u << 20) + 3, k++, 1), cases++;
  total += report("AlltoAll (4 dtypes x 5 counts, 2 CUDA graphs replayed 3 times)", cases, fails);
  fails = cases = 0;
  for (int t = 0; t < 4; t++)
    for (int rep = 0; rep < 3; rep++, cases++) fails += alltoallv(dts[t], k++);
  total += report("AlltoAllv (random counts with zeros)", cases, fails);
  for (int scatter = 0; scatter < 2; scatter++) {
    fails = cases = 0;
    for (int root = 0; root < n; root++)
      for (int c = 0; c < 5; c++)
        for (int inplace = 0; inplace < 2; inplace++, cases++)
          fails += rooted(scatter, counts[c], root, inplace, k++);
    total += report(scatter ? "Scatter (every root)" : "Gather (every root)", cases, fails);
  }
  int ring[1] = {1}, all[MAXDEV];
  for (int d = 0; d < n; d++) all[d] = d;
  fails = 0;
  fails += sendrecv("SendRecv ring 1 MB", ring, 1, 1, 1u << 20, 0, k++);
  fails += sendrecv("SendRecv ring 13 B", ring, 1, 1, 13, 0, k++);
  fails += sendrecv("SendRecv all pairs + self 300 KB", all, n, 1, 300001, 0, k++);
  fails += sendrecv("SendRecv 100 messages per pair (several launches)", all, n, 100, 4099, 0, k++);
  fails += sendrecv("SendRecv two streams in one group", all, n, 4, 70000, 1, k++);
  total += report("SendRecv patterns", 5, fails);
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    CK(cudaFree(sendb[r]));
    CK(cudaFree(recvb[r]));
    CK(cudaStreamDestroy(streams[r]));
    CK(cudaStreamDestroy(side[r]));
    NK(ncclCommDestroy(comms[r]));
  }
  free(host);
  printf("%s test_gpu_p2p\n", total ? "FAIL" : "PASS");
  return total ? 1 : 0;
}

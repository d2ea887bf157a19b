/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: the built-in TCP network's parsers of bytes from a peer (transport/net_tcp*.c),
 * on the loopback. Byte 0 picks what the rest is:
 *   0  the first bytes of a new connection to a listener with a key (handshake, then hello)
 *   1  the same without a key (the hello parser gets the bytes)
 *   2  a receive comm's control stream (message headers and inline bytes) and, after byte 1
 *      (its length), the bytes of its data socket; two receives are posted (byte 2, 3: their
 *      sizes, in 16 KB steps) and tested until they end
 *   3  a handle given to connect (over a real one: the address stays this process's listener)
 * One thread plays both sides without blocking, as the proxy thread does. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "transport/net.h"
#include "transport/net_tcp.h"

static const unsigned char key[AUTH_KEY_BYTES] = "fuzz-net-tcp-key";
/* A listener per mode, made again every RENEW inputs: a stranger that learnt a listener's token
 * (libFuzzer follows comparisons) leaves complete hellos pending for good, as a rank of the job
 * whose connection never completes would. */
#define RENEW  64
#define HANG_S 5.0 /* a request or connect still going after both sides ended: a hang */
static void *keyed_l, *plain_l, *ctrl_l, *conn_l;
static unsigned char keyed_h[NET_HANDLE_BYTES], plain_h[NET_HANDLE_BYTES];
static unsigned char ctrl_h[NET_HANDLE_BYTES], conn_h[NET_HANDLE_BYTES];

static int renew_now; /* a listener refused a connection: make them again at the next input */

static void setup(void) {
  static int inputs;
  if (inputs++ % RENEW != 0 && !renew_now) return;
  renew_now = 0;
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  setenv("NCCL_SOCKET_NTHREADS", "1", 1);
  setenv("NCCL_NSOCKS_PERTHREAD", "1", 1);
  void** ls[] = {&keyed_l, &plain_l, &ctrl_l, &conn_l};
  unsigned char* hs[] = {keyed_h, plain_h, ctrl_h, conn_h};
  for (int i = 0; i < 4; i++) {
    if (*ls[i] != NULL) net_tcp.close_listen(*ls[i]);
    if (net_tcp.listen(0, i == 0 ? key : NULL, hs[i], ls[i]) != ncclSuccess) abort();
  }
}

/* A connection to the listener of the handle, or -1 when it does not complete within a second:
 * a listener whose pending strangers reached their bound stops taking connections (as it
 * should), the kernel's backlog fills, and a blocking connect would wait for retried SYNs (and
 * fail with EINTR at libFuzzer's alarm). Then the input is skipped and the listeners renewed. */
static int raw_connect(const unsigned char* handle) {
  struct tcp_handle h;
  memcpy(&h, handle, sizeof h);
  int fd = socket(h.addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) abort();
  int err = 0;
  socklen_t len = sizeof err;
  if (connect(fd, &h.addr.sa, sock_addr_len(&h.addr)) != 0) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int k;
    if (errno != EINPROGRESS) err = errno;
    while (!err && (k = poll(&p, 1, 1000)) < 0 && errno == EINTR) {
    }
    if (!err && k <= 0) err = ETIMEDOUT;
    if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  }
  if (err) {
    close(fd);
    renew_now = 1;
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) abort(); /* blocking sends, as before */
  return fd;
}

static void send_some(int fd, const uint8_t* d, size_t n) {
  if (n > 0 && send(fd, d, n, MSG_NOSIGNAL) < 0) { /* the listener closed it already: fine */
  }
}

/* Modes 0 and 1: a new connection carrying the bytes, then its end. */
static void stranger(int keyed, const uint8_t* d, size_t n) {
  void* l = keyed ? keyed_l : plain_l;
  void* r = NULL;
  int fd = raw_connect(keyed ? keyed_h : plain_h);
  if (fd < 0) return;
  send_some(fd, d, n);
  close(fd);
  for (int i = 0; i < 3; i++) /* accept, read, drop (what is not there yet: a later input's) */
    if (net_tcp.accept(l, &r) != ncclSuccess || r != NULL) abort();
}

/* Mode 2: a receive comm whose sender is raw sockets. */
static void control(const uint8_t* d, size_t n) {
  if (n < 3) return;
  struct tcp_handle h;
  memcpy(&h, ctrl_h, sizeof h);
  int fds[2];
  void* r = NULL;
  for (uint32_t i = 0; i < 2; i++) {
    struct tcp_hello hi = {TCP_MAGIC, i, h.token, 77, 1, 1, 0};
    fds[i] = raw_connect(ctrl_h);
    if (fds[i] < 0) {
      if (i > 0) close(fds[0]);
      return;
    }
    send_some(fds[i], (const uint8_t*)&hi, sizeof hi);
  }
  for (double t0 = sock_time_now(); r == NULL; poll(NULL, 0, 1))
    if (net_tcp.accept(ctrl_l, &r) != ncclSuccess || sock_time_now() - t0 > HANG_S) abort();
  static char buf[2][32 * 16384];
  void* data[2] = {buf[0], buf[1]};
  size_t sizes[2] = {(size_t)(d[1] & 31) * 16384, (size_t)(d[2] & 31) * 16384};
  int tags[2] = {0, 1};
  void *mh = NULL, *req[2] = {NULL, NULL};
  if (net_tcp.reg_mr(r, buf, sizeof buf, NET_PTR_HOST, &mh) != ncclSuccess) abort();
  (void)net_tcp.irecv(r, 2, data, sizes, tags, (void*[]){mh, mh}, NULL, &req[0]);
  (void)net_tcp.irecv(r, 1, data, sizes, tags, &mh, NULL, &req[1]);
  size_t split = d[0] < n - 3 ? n - 3 - d[0] : 0; /* the last d[0] bytes go to the data socket */
  send_some(fds[0], d + 3, split);
  send_some(fds[1], d + 3 + split, n - 3 - split);
  close(fds[0]);
  close(fds[1]);
  double t0 = sock_time_now();
  for (int k = 0; k < 2; k++) /* each request ends: done, or failed once both sockets ended */
    for (int done = 0; req[k] != NULL && !done;) {
      if (net_tcp.test(req[k], &done, NULL) != ncclSuccess) break;
      if (sock_time_now() - t0 > HANG_S) abort(); /* a request that never ends */
      if (!done) net_tcp.wait(1);
    }
  net_tcp.dereg_mr(r, mh);
  net_tcp.close_recv(r);
}

/* Mode 3: connect with a handle made of the bytes (address kept), until it ends. */
static void handle(const uint8_t* d, size_t n) {
  unsigned char hb[NET_HANDLE_BYTES];
  struct tcp_handle h, real;
  memcpy(&real, conn_h, sizeof real);
  memcpy(hb, conn_h, sizeof hb);
  memcpy(hb, d, n < sizeof hb ? n : sizeof hb);
  memcpy(&h, hb, sizeof h);
  h.addr = real.addr;
  memcpy(hb, &h, sizeof h);
  void *s = NULL, *r = NULL;
  double t0 = sock_time_now();
  while (s == NULL) {
    if (net_tcp.connect(0, NULL, hb, &s) != ncclSuccess) break;
    (void)net_tcp.accept(conn_l, &r);
    if (r != NULL) net_tcp.close_recv(r), r = NULL;
    if (sock_time_now() - t0 > HANG_S) abort(); /* a connect that never ends */
  }
  if (s != NULL) net_tcp.close_send(s);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  setup();
  switch (data[0] & 3) {
  case 0:
  case 1:
    stranger(!(data[0] & 1), data + 1, size - 1);
    break;
  case 2:
    control(data + 1, size - 1);
    break;
  default:
    handle(data + 1, size - 1);
  }
  return 0;
}

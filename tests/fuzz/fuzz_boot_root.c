/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: the bootstrap root's reading of a new connection (boot/boot_root.c: the handshake,
 * then the length word and hello), through a real root on the loopback. With FUZZ_NO_AUTH set the
 * root runs without the handshake (MONEL_AUTH=0), so the hello parser itself gets the bytes. Each
 * input is one connection. A root serves one job and lives at most MONEL_BOOT_TIMEOUT (5 s here): a
 * new root takes over once it is that old (so the join returns at once), or as soon as the connect
 * is refused because inputs carrying the corpus's secret completed a whole job. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "boot/boot_impl.h"

static struct boot_root* root;
static union sock_addr addr;
static double started;

static void root_restart(void) {
  unsigned char key[AUTH_KEY_BYTES] = {7};
  if (getenv("FUZZ_NO_AUTH")) setenv("MONEL_AUTH", "0", 1);
  setenv("MONEL_BOOT_TIMEOUT", "5", 1);
  if (root != NULL) boot_root_join(root); /* it has served its job or timed out */
  root = NULL;
  memset(&addr, 0, sizeof addr);
  addr.sin.sin_family = AF_INET;
  addr.sin.sin_addr.s_addr = htonl(0x7f000001);
  if (boot_root_start(&addr, 42, key, 0, &root) != ncclSuccess) abort();
  started = sock_time_now();
}

static int connect_root(double wait_s) {
  enum sock_err err;
  int fd = -1;
  if (sock_conn_open(&addr, sock_time_now() + wait_s, NULL, &fd, &err) != ncclSuccess) return -1;
  return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  enum sock_err err;
  int fd;
  if (root == NULL || sock_time_now() - started > 5.5) root_restart();
  fd = connect_root(1);
  if (fd < 0) { /* the root finished its job: only a fresh root must accept */
    root_restart();
    fd = connect_root(5);
    if (fd < 0) abort();
  }
  if (size) (void)sock_send_all(fd, data, size, sock_time_now() + 1, NULL, &err);
  close(fd);
  return 0;
}

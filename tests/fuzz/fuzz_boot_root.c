/* Fuzz target: the bootstrap root's reading of a new connection (boot/boot_root.c: the handshake,
 * then the length word and hello), through a real root on the loopback. With FUZZ_NO_AUTH set the
 * root runs without the handshake (MONEL_AUTH=0), so the hello parser itself gets the bytes. Each
 * input is one connection; the root keeps serving (a root serves one job, at most
 * MONEL_BOOT_TIMEOUT; a new one is started when it is gone). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "boot/boot_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static struct boot_root* root;
  static union sock_addr addr;
  static double started;
  unsigned char key[AUTH_KEY_BYTES] = {7};
  enum sock_err err;
  int fd = -1;
  if (root == NULL || sock_time_now() - started > 20) {
    if (getenv("FUZZ_NO_AUTH")) setenv("MONEL_AUTH", "0", 1);
    setenv("MONEL_BOOT_TIMEOUT", "30", 1);
    if (root != NULL) boot_root_join(root); /* at most 30 s after its start */
    root = NULL;
    memset(&addr, 0, sizeof addr);
    addr.sin.sin_family = AF_INET;
    addr.sin.sin_addr.s_addr = htonl(0x7f000001);
    if (boot_root_start(&addr, 42, key, 0, &root) != ncclSuccess) abort();
    started = sock_time_now();
  }
  if (sock_conn_open(&addr, sock_time_now() + 5, NULL, &fd, &err) != ncclSuccess) abort();
  if (size) (void)sock_send_all(fd, data, size, sock_time_now() + 1, NULL, &err);
  close(fd);
  return 0;
}

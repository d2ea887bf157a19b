/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: the server side of the handshake (os/auth.c, auth_srv_step), which reads the first
 * bytes of every bootstrap and watch connection, fed the input through a socket pair. */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "os/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int sv[2];
  unsigned char key[AUTH_KEY_BYTES] = {1, 2, 3};
  const char* why = NULL;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
  if (size > 4096) size = 4096; /* the socket buffer takes it at once */
  if (size && write(sv[1], data, size) < 0) size = 0;
  shutdown(sv[1], SHUT_WR);
  struct auth_srv s;
  memset(&s, 0, sizeof s);
  for (int i = 0; i < 64 && auth_srv_step(&s, sv[0], key, &why) == 1; i++) {
  }
  close(sv[0]);
  close(sv[1]);
  return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Proof that the other end of a connection belongs to the job: a mutual challenge-response over
 * the job's secret key, with HMAC-SHA256 from OpenSSL's libcrypto (loaded at run time: dlopen of
 * libcrypto.so.3; no cryptography of Monel's own).
 *
 * Wire, before any other byte of the connection:
 *   client -> server  magic "MNLA" (4), client nonce (16)
 *   server -> client  server nonce (16), HMAC(key, "S" nc ns) (32)
 *   client -> server  HMAC(key, "C" nc ns) (32)
 * Each side checks the other's MAC; a failure closes the connection at once. Nonces are fresh
 * random bytes (getrandom), so a recorded exchange proves nothing the next time.
 *
 * Without libcrypto (or with MONEL_AUTH=0 on every rank) there is no handshake: connections
 * carry the job's protocol at once, and one WARN says that anyone who can reach the ports can
 * join. Every rank of a job must agree (all with libcrypto, or all without). */
#ifndef MONEL_OS_AUTH_H
#define MONEL_OS_AUTH_H
#include <stddef.h>
#include "nccl.h"
#include "os/socket.h"

#define AUTH_KEY_BYTES   16
#define AUTH_NONCE_BYTES 16
#define AUTH_MAC_BYTES   32
#define AUTH_MAGIC       0x414c4e4du /* "MNLA" */

/* 1 when connections authenticate (libcrypto loaded and MONEL_AUTH not 0). The first call
 * logs which (INFO, or one WARN when the library is missing). */
int auth_enabled(void);
/* Fresh random key bytes (getrandom). */
ncclResult_t auth_key_random(unsigned char key[AUTH_KEY_BYTES]);
/* A key from a string shared by every rank (MONEL_JOB_SECRET): its SHA-256, cut to size. */
ncclResult_t auth_key_from_string(const char* s, unsigned char key[AUTH_KEY_BYTES]);

/* Blocking, until deadline (sock_time_now based; abort may be NULL). Returns ncclSuccess when
 * both ends proved the key (or auth is off); else ncclRemoteError and *why says what failed. */
ncclResult_t auth_client(int fd, const unsigned char key[AUTH_KEY_BYTES], double deadline,
                         const volatile int* abort, const char** why);
ncclResult_t auth_server(int fd, const unsigned char key[AUTH_KEY_BYTES], double deadline,
                         const volatile int* abort, const char** why);

/* The client side's state for auth_cli_step. */
struct auth_cli {
  unsigned char nc[AUTH_NONCE_BYTES];
  int stage; /* auth_cli_step: 0 hello out, 1 answer in, 2 MAC out, 3 done */
  size_t at; /* bytes of the stage moved */
  unsigned char buf[AUTH_NONCE_BYTES + AUTH_MAC_BYTES];
};

/* The client side for a connector that must never block (start with *c zeroed): call when fd
 * is connected, and again while it returns 1 (more bytes to move); 0 once both ends proved the
 * key (the next bytes on fd are the job's), -1 on failure (*why set; the caller closes fd).
 * With auth off: 0 at once. A fresh connection's send buffer takes the 20 and 32 bytes it sends. */
int auth_cli_step(struct auth_cli* c, int fd, const unsigned char key[AUTH_KEY_BYTES],
                  const char** why);

/* The server side for a non-blocking reader (an accept loop that serves many new connections
 * at once): call auth_srv_step when fd is readable. */
struct auth_srv {
  int stage; /* 0: client hello, 1: client MAC, 2: done */
  size_t got;
  unsigned char in[AUTH_MAC_BYTES]; /* the client's hello (20 bytes), then its MAC */
  unsigned char nc[AUTH_NONCE_BYTES], ns[AUTH_NONCE_BYTES];
};
/* Returns 1 while more bytes are needed, 0 once the client proved the key (the next bytes on fd
 * are the job's), -1 on failure (*why set; the caller closes fd). With auth off: 0 at once. */
int auth_srv_step(struct auth_srv* s, int fd, const unsigned char key[AUTH_KEY_BYTES],
                  const char** why);

/* Longest wait for one connection's handshake and hello at a listener that serves many at once
 * (os/pending.h). */
#define AUTH_STRANGER_S 5.0

/* A connection that failed to prove the key: the first from each address is logged at WARN
 * (naming `where`, the address and why), later ones at INFO. */
void auth_stranger(const char* where, int fd, const char* why);

#endif

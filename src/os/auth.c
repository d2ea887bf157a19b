/* SPDX-License-Identifier: BSD-3-Clause */
/* Mutual challenge-response over the job's key: see auth.h. HMAC-SHA256 and SHA-256 come from
 * libcrypto (OpenSSL 3), loaded at run time. */
#include "os/auth.h"
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include "util/log.h"
#include "util/param.h"

typedef const void* (*evp_md_fn)(void);
typedef unsigned char* (*hmac_fn)(const void* md, const void* key, int key_len,
                                  const unsigned char* d, size_t n, unsigned char* out,
                                  unsigned int* out_len);
typedef int (*memcmp_fn)(const void* a, const void* b, size_t len);

static struct {
  pthread_once_t once;
  int on;
  evp_md_fn sha256;
  hmac_fn hmac;
  memcmp_fn equal; /* CRYPTO_memcmp: constant time */
  unsigned char* (*digest)(const unsigned char* d, size_t n, unsigned char* md); /* SHA256 */
} lib = {PTHREAD_ONCE_INIT, 0, NULL, NULL, NULL, NULL};

static void load(void) {
  if (param_int(PARAM_AUTH) == 0) {
    WARN("MONEL_AUTH=0: connections between ranks are not authenticated; anyone who can reach "
         "this job's ports can join it or send it messages");
    return;
  }
  void* h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  if (h != NULL) {
    lib.sha256 = (evp_md_fn)dlsym(h, "EVP_sha256");
    lib.hmac = (hmac_fn)dlsym(h, "HMAC");
    lib.equal = (memcmp_fn)dlsym(h, "CRYPTO_memcmp");
    *(void**)&lib.digest = dlsym(h, "SHA256");
  }
  if (h == NULL || !lib.sha256 || !lib.hmac || !lib.equal || !lib.digest) {
    WARN("libcrypto.so.3 (OpenSSL 3) %s: connections between ranks are not authenticated, "
         "anyone who can reach this job's ports can join it; install OpenSSL 3 on every host "
         "(every rank of a job must have it, or set MONEL_AUTH=0 on all)",
         h == NULL ? "is not installed" : "lacks HMAC");
    return;
  }
  lib.on = 1;
  INFO(LOG_INIT | LOG_BOOTSTRAP, "connections between ranks authenticate with HMAC-SHA256 "
                                 "(libcrypto.so.3) over the job's secret");
}

int auth_enabled(void) {
  pthread_once(&lib.once, load);
  return lib.on;
}

ncclResult_t auth_key_random(unsigned char key[AUTH_KEY_BYTES]) {
  if (getrandom(key, AUTH_KEY_BYTES, 0) != AUTH_KEY_BYTES) {
    WARN("getrandom failed: %s; the job's secret needs the kernel's random source",
         strerror(errno));
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t auth_key_from_string(const char* s, unsigned char key[AUTH_KEY_BYTES]) {
  unsigned char md[32];
  memset(key, 0, AUTH_KEY_BYTES);
  if (!auth_enabled()) return ncclSuccess; /* nothing checks the key */
  lib.digest((const unsigned char*)s, strlen(s), md);
  memcpy(key, md, AUTH_KEY_BYTES);
  return ncclSuccess;
}

/* HMAC(key, tag nc ns) */
static void mac(const unsigned char* key, char tag, const unsigned char* nc,
                const unsigned char* ns, unsigned char out[AUTH_MAC_BYTES]) {
  unsigned char msg[1 + 2 * AUTH_NONCE_BYTES];
  unsigned int len = AUTH_MAC_BYTES;
  msg[0] = (unsigned char)tag;
  memcpy(msg + 1, nc, AUTH_NONCE_BYTES);
  memcpy(msg + 1 + AUTH_NONCE_BYTES, ns, AUTH_NONCE_BYTES);
  lib.hmac(lib.sha256(), key, AUTH_KEY_BYTES, msg, sizeof msg, out, &len);
}

static int nonce(unsigned char n[AUTH_NONCE_BYTES]) {
  return getrandom(n, AUTH_NONCE_BYTES, 0) == AUTH_NONCE_BYTES ? 0 : -1;
}

/* The client's hello: magic, a fresh nonce (kept in c->nc). */
static int cli_hello(struct auth_cli* c, unsigned char hello[4 + AUTH_NONCE_BYTES]) {
  uint32_t magic = AUTH_MAGIC;
  if (nonce(c->nc) != 0) return -1;
  memcpy(hello, &magic, 4);
  memcpy(hello + 4, c->nc, AUTH_NONCE_BYTES);
  return 0;
}

/* The client's check of the server's answer (its nonce, its MAC): 0 and the client's own MAC in
 * out when the server holds the key, else -1. */
static int cli_answer(const struct auth_cli* c, const unsigned char* reply,
                      const unsigned char* key, unsigned char out[AUTH_MAC_BYTES]) {
  mac(key, 'S', c->nc, reply, out);
  if (lib.equal(out, reply + AUTH_NONCE_BYTES, AUTH_MAC_BYTES) != 0) return -1;
  mac(key, 'C', c->nc, reply, out);
  return 0;
}

static ncclResult_t client_start(int fd, struct auth_cli* c, double deadline,
                                 const volatile int* abort, const char** why) {
  unsigned char hello[4 + AUTH_NONCE_BYTES];
  enum sock_err err = SOCK_OK;
  *why = NULL;
  if (!auth_enabled()) return ncclSuccess;
  if (cli_hello(c, hello) != 0) {
    *why = "no random bytes for a nonce";
    return ncclSystemError;
  }
  if (sock_send_all(fd, hello, sizeof hello, deadline, abort, &err) != ncclSuccess) {
    *why = sock_err_str(err);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

static ncclResult_t client_finish(int fd, const struct auth_cli* c,
                                  const unsigned char key[AUTH_KEY_BYTES], double deadline,
                                  const volatile int* abort, const char** why) {
  unsigned char reply[AUTH_NONCE_BYTES + AUTH_MAC_BYTES], want[AUTH_MAC_BYTES];
  enum sock_err err = SOCK_OK;
  *why = NULL;
  if (!auth_enabled()) return ncclSuccess;
  if (sock_recv_all(fd, reply, sizeof reply, deadline, abort, &err) != ncclSuccess) {
    *why = err == SOCK_EOF || err == SOCK_RESET
               ? "the other end closed the connection during the handshake (it does not hold "
                 "this job's secret)"
               : sock_err_str(err);
    return ncclRemoteError;
  }
  if (cli_answer(c, reply, key, want) != 0) {
    *why = "the other end does not hold this job's secret";
    return ncclRemoteError;
  }
  if (sock_send_all(fd, want, sizeof want, deadline, abort, &err) != ncclSuccess) {
    *why = sock_err_str(err);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

ncclResult_t auth_client(int fd, const unsigned char key[AUTH_KEY_BYTES], double deadline,
                         const volatile int* abort, const char** why) {
  struct auth_cli c;
  ncclResult_t res = client_start(fd, &c, deadline, abort, why);
  if (res != ncclSuccess) return res;
  return client_finish(fd, &c, key, deadline, abort, why);
}

/* Moves what the socket takes or has of c->buf[at..n): 1 when all moved, 0 not yet, -1 failed. */
static int cli_move(struct auth_cli* c, int fd, size_t n, int out, const char** why) {
  while (c->at < n) {
    ssize_t k = out ? send(fd, c->buf + c->at, n - c->at, MSG_DONTWAIT | MSG_NOSIGNAL)
                    : recv(fd, c->buf + c->at, n - c->at, MSG_DONTWAIT);
    if (k > 0) {
      c->at += (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    *why = k == 0 || errno == ECONNRESET || errno == EPIPE
               ? "the other end closed the connection during the handshake (it does not hold "
                 "this job's secret, or dropped the connection)"
               : strerror(errno);
    return -1;
  }
  c->at = 0;
  return 1;
}

int auth_cli_step(struct auth_cli* c, int fd, const unsigned char key[AUTH_KEY_BYTES],
                  const char** why) {
  *why = NULL;
  if (!auth_enabled()) return 0;
  if (c->stage == 0 && c->at == 0 && cli_hello(c, c->buf) != 0) {
    *why = "no random bytes for a nonce";
    return -1;
  }
  int r = 1;
  while (c->stage < 3 && r == 1) {
    if (c->stage == 0)
      r = cli_move(c, fd, 4 + AUTH_NONCE_BYTES, 1, why);
    else if (c->stage == 1)
      r = cli_move(c, fd, sizeof c->buf, 0, why);
    else
      r = cli_move(c, fd, AUTH_MAC_BYTES, 1, why);
    if (r == 1 && c->stage == 1) { /* the answer is in: the MAC to send replaces it */
      unsigned char m[AUTH_MAC_BYTES];
      if (cli_answer(c, c->buf, key, m) != 0) {
        *why = "the other end does not hold this job's secret";
        return -1;
      }
      memcpy(c->buf, m, sizeof m);
    }
    if (r == 1) c->stage++;
  }
  return r < 0 ? -1 : c->stage == 3 ? 0 : 1;
}

/* The server's answer once the client's hello is in s->in. */
static int srv_answer(struct auth_srv* s, int fd, const unsigned char* key, const char** why) {
  uint32_t magic;
  unsigned char out[AUTH_NONCE_BYTES + AUTH_MAC_BYTES];
  memcpy(&magic, s->in, 4);
  if (magic != AUTH_MAGIC) {
    *why = "it did not start with the handshake (not a rank of a Monel job, or authentication "
           "is off there)";
    return -1;
  }
  memcpy(s->nc, s->in + 4, AUTH_NONCE_BYTES);
  if (nonce(s->ns) != 0) {
    *why = "no random bytes for a nonce";
    return -1;
  }
  memcpy(out, s->ns, AUTH_NONCE_BYTES);
  mac(key, 'S', s->nc, s->ns, out + AUTH_NONCE_BYTES);
  /* a fresh connection's send buffer takes 48 bytes at once */
  if (send(fd, out, sizeof out, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof out) {
    *why = "it did not take the server's answer";
    return -1;
  }
  s->stage = 1, s->got = 0;
  return 1;
}

int auth_srv_step(struct auth_srv* s, int fd, const unsigned char key[AUTH_KEY_BYTES],
                  const char** why) {
  unsigned char want[AUTH_MAC_BYTES];
  *why = NULL;
  if (!auth_enabled() || s->stage == 2) return 0;
  size_t need = s->stage == 0 ? 4 + AUTH_NONCE_BYTES : AUTH_MAC_BYTES;
  ssize_t k = recv(fd, s->in + s->got, need - s->got, MSG_DONTWAIT);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 1;
  if (k <= 0) {
    *why = k == 0 ? "it closed the connection during the handshake" : strerror(errno);
    return -1;
  }
  s->got += (size_t)k;
  uint32_t magic;
  memcpy(&magic, s->in, 4);
  if (s->stage == 0 && s->got >= 4 && magic != AUTH_MAGIC) return srv_answer(s, fd, key, why);
  if (s->got < need) return 1;
  if (s->stage == 0) return srv_answer(s, fd, key, why);
  mac(key, 'C', s->nc, s->ns, want);
  if (lib.equal(want, s->in, AUTH_MAC_BYTES) != 0) {
    *why = "it does not hold this job's secret (wrong MAC)";
    return -1;
  }
  s->stage = 2;
  return 0;
}

/* Steps the server side until it is done. */
static ncclResult_t srv_run(int fd, struct auth_srv* s, const unsigned char* key, double deadline,
                            const volatile int* abort, const char** why) {
  *why = NULL;
  for (;;) {
    int r = auth_srv_step(s, fd, key, why);
    if (r == 0) return ncclSuccess;
    if (r < 0) return ncclRemoteError;
    double left = deadline - sock_time_now();
    if (left <= 0 || (abort && *abort)) {
      *why = left <= 0 ? "it did not complete the handshake in time" : "aborted";
      return ncclRemoteError;
    }
    struct pollfd p = {fd, POLLIN, 0};
    (void)poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
  }
}

ncclResult_t auth_server(int fd, const unsigned char key[AUTH_KEY_BYTES], double deadline,
                         const volatile int* abort, const char** why) {
  struct auth_srv s;
  memset(&s, 0, sizeof s);
  return srv_run(fd, &s, key, deadline, abort, why);
}

/* ---- strangers ------------------------------------------------------------------------------ */

#define SEEN_MAX 256
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static union sock_addr seen[SEEN_MAX];
static int nseen;

static int same_host(const union sock_addr* a, const union sock_addr* b) {
  if (a->sa.sa_family != b->sa.sa_family) return 0;
  if (a->sa.sa_family == AF_INET) return a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
  if (a->sa.sa_family == AF_INET6)
    return memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr, sizeof a->sin6.sin6_addr) == 0;
  return 1;
}

void auth_stranger(const char* where, int fd, const char* why) {
  union sock_addr from;
  socklen_t len = sizeof from;
  char str[SOCK_ADDR_STRLEN];
  int first = 1;
  memset(&from, 0, sizeof from);
  if (getpeername(fd, &from.sa, &len) != 0) from.sa.sa_family = AF_UNSPEC;
  sock_addr_to_str(&from, str, sizeof str);
  pthread_mutex_lock(&seen_mu);
  for (int i = 0; i < nseen && first; i++) first = !same_host(&seen[i], &from);
  if (first && nseen < SEEN_MAX) seen[nseen++] = from;
  pthread_mutex_unlock(&seen_mu);
  if (first)
    WARN("%s: closed a connection from %s that is not a rank of this job: %s; later ones from "
         "that address are logged at INFO only",
         where, str, why ? why : "?");
  else
    INFO(LOG_INIT | LOG_BOOTSTRAP, "%s: closed a connection from %s: %s", where, str,
         why ? why : "?");
}

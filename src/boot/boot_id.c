/* SPDX-License-Identifier: BSD-3-Clause */
/* The bootstrap's unique id: where the root listens, the job's secret and key (os/auth.h). A
 * fresh id starts a root in this process (boot_root.c) and draws its secret and key from the
 * kernel's random source; with NCCL_COMM_ID every rank builds the same id alone, its key from
 * MONEL_JOB_SECRET. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include "boot/boot_impl.h"
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

static uint64_t secret_of_string(const char* s) { /* FNV-1a: ranks that build the id alone agree */
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static ncclResult_t id_create(ncclUniqueId* id, int honour_comm_id) {
  struct boot_id b;
  struct boot_root* root = NULL;
  char str[SOCK_ADDR_STRLEN];
  memset(&b, 0, sizeof(b));
  b.magic = BOOT_MAGIC_TCP;
  boot_root_reap();
  if (honour_comm_id && param_is_set(PARAM_COMM_ID)) {
    NCCLCHECK(sock_addr_parse(param_str(PARAM_COMM_ID), &b.root));
    b.flags = BOOT_FLAG_COMM_ID;
    b.secret = secret_of_string(param_str(PARAM_COMM_ID));
    if (param_is_set(PARAM_JOB_SECRET)) {
      NCCLCHECK(auth_key_from_string(param_str(PARAM_JOB_SECRET), b.key));
    } else {
      INFO(LOG_INIT | LOG_BOOTSTRAP,
           "NCCL_COMM_ID without MONEL_JOB_SECRET: this job runs without "
           "a secret (its key derives from NCCL_COMM_ID, which anyone can guess); set "
           "MONEL_JOB_SECRET to the same string on every rank");
      NCCLCHECK(auth_key_from_string(param_str(PARAM_COMM_ID), b.key));
    }
  } else {
    if (getrandom(&b.secret, sizeof(b.secret), 0) != (ssize_t)sizeof(b.secret)) {
      WARN("getrandom failed: %s; the bootstrap needs a random secret", strerror(errno));
      return ncclSystemError;
    }
    NCCLCHECK(auth_key_random(b.key));
    NCCLCHECK(sock_iface_find(&b.root, NULL, 0));
    NCCLCHECK(boot_root_start(&b.root, b.secret, b.key, 1, &root));
  }
  INFO(LOG_BOOTSTRAP, "bootstrap id: root at %s%s", sock_addr_to_str(&b.root, str, sizeof(str)),
       b.flags & BOOT_FLAG_COMM_ID ? " (NCCL_COMM_ID)" : "");
  memset(id, 0, sizeof(*id));
  memcpy(id, &b, sizeof(b));
  return ncclSuccess;
}

ncclResult_t boot_id_create(ncclUniqueId* id) {
  return id_create(id, 1);
}
ncclResult_t boot_id_create_private(ncclUniqueId* id) {
  return id_create(id, 0);
}

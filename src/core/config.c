/* SPDX-License-Identifier: BSD-3-Clause */
/* ncclConfig_t parsing, exactly as the ABI asks: read the caller's size, take what it holds over
 * the defaults, accept newer versions, reject structs not made by NCCL_CONFIG_INITIALIZER. */
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include "util/check.h"
#include "core/comm.h"
#include "util/param.h"

#define CONFIG_MAGIC 0xcafebeefu

static int undef(int v) {
  return v == NCCL_CONFIG_UNDEF_INT;
}

ncclResult_t comm_config_parse(const ncclConfig_t* user, ncclConfig_t* out) {
  ncclConfig_t def = NCCL_CONFIG_INITIALIZER;
  *out = def;
  if (user != NULL) {
    if (user->magic != CONFIG_MAGIC || user->size < offsetof(ncclConfig_t, blocking)) {
      WARN("ncclConfig_t was not initialized with NCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu): "
           "declare it as `ncclConfig_t config = NCCL_CONFIG_INITIALIZER;`",
           user->magic, user->size);
      return ncclInvalidArgument;
    }
    size_t n = user->size < sizeof(ncclConfig_t) ? user->size : sizeof(ncclConfig_t);
    memcpy(out, user, n);
    out->size = sizeof(ncclConfig_t);
    out->magic = CONFIG_MAGIC;
    /* Fields newer than the caller's header keep their defaults. */
    if (user->version < NCCL_VERSION(2, 28, 0)) {
      out->nChannelsPerNetPeer = NCCL_CONFIG_UNDEF_INT;
      out->nvlinkCentricSched = NCCL_CONFIG_UNDEF_INT;
    }
  }
  if (undef(out->blocking)) {
    int64_t env = param_int(PARAM_COMM_BLOCKING);
    out->blocking = env == 0 ? 0 : 1;
  }
  if (out->blocking != 0 && out->blocking != 1) {
    WARN("config.blocking is %d: it must be 0 (nonblocking) or 1 (blocking)", out->blocking);
    return ncclInvalidArgument;
  }
  if (!undef(out->minCTAs) && out->minCTAs < 1) {
    WARN("config.minCTAs is %d: it must be at least 1", out->minCTAs);
    return ncclInvalidArgument;
  }
  if (!undef(out->maxCTAs) && out->maxCTAs < 1) {
    WARN("config.maxCTAs is %d: it must be at least 1", out->maxCTAs);
    return ncclInvalidArgument;
  }
  if (!undef(out->minCTAs) && !undef(out->maxCTAs) && out->minCTAs > out->maxCTAs) {
    WARN("config.minCTAs (%d) is larger than config.maxCTAs (%d)", out->minCTAs, out->maxCTAs);
    return ncclInvalidArgument;
  }
  if (!undef(out->splitShare) && out->splitShare != 0 && out->splitShare != 1) {
    WARN("config.splitShare is %d: it must be 0 or 1", out->splitShare);
    return ncclInvalidArgument;
  }
  if (!undef(out->CTAPolicy) && (out->CTAPolicy < 0 || out->CTAPolicy > 2)) {
    WARN("config.CTAPolicy is %d: it must be NCCL_CTA_POLICY_DEFAULT, _EFFICIENCY or _ZERO",
         out->CTAPolicy);
    return ncclInvalidArgument;
  }
  /* Strings point into the caller's memory; the comm copies what it keeps (comm_name). */
  out->netName = NULL;
  return ncclSuccess;
}

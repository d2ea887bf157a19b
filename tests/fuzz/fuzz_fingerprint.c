/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: the fingerprint messages of the watch ring (core/fingerprint.c, fp_on_msg) as a
 * rank of 3 receives them from its previous rank. Input: byte 0 picks the message type (even:
 * data, odd: mismatch), byte 1 how many collectives this rank issued first (0..15), the rest is
 * the message body. */
#include <stdint.h>
#include <string.h>
#include "core/comm.h"
#include "core/fingerprint.h"
#include "core/task.h"

static int sent;
static int count_send(void* ctx, uint32_t type, const void* body, uint32_t len) {
  (void)ctx, (void)type, (void)body, (void)len;
  sent++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static struct ncclComm comm;
  if (size < 2) return 0;
  memset(&comm, 0, sizeof comm);
  comm.rank = 1, comm.nranks = 3;
  struct fp* f = fp_create(&comm);
  if (f == NULL) return 0;
  for (int i = 0; i < (data[1] & 15); i++) {
    struct task t;
    memset(&t, 0, sizeof t);
    t.coll = (enum coll_kind)(i % 3 == 2 ? COLL_SEND : COLL_ALLREDUCE);
    t.count = 1024, t.dtype = ncclFloat, t.root = i % 3, t.seq = (uint64_t)i + 1;
    fp_issue(f, &t);
  }
  uint32_t type = data[0] & 1 ? FP_MSG_MISMATCH : FP_MSG_DATA;
  fp_on_msg(f, type, data + 2, (uint32_t)(size - 2), count_send, NULL);
  fp_service(f, 1e9, count_send, NULL);
  fp_free(f);
  return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* core/tune.c's thread-block model (the fewest blocks that fill the link, one per block_bytes
 * below that, half with the efficiency policy, the limits applied last), the CTA limits'
 * precedence (environment over config over NCCL_*_NCHANNELS) and their clamping to 1..64, and
 * the copy-engine path (the GPU path of small collectives is the plan's: test_plan.c). */
#include "core/tune.h"
#include "harness.h"

static struct tune_blocks_in nvlink(double bytes) {
  struct tune_blocks_in in = {bytes, 450, 25, 128 << 10, 0, 0, 0};
  return in;
}

TEST(blocks_fill_the_link) {
  struct tune_blocks_in in = nvlink(1 << 30);
  CHECK_EQ(tune_blocks(&in), 18); /* 450 / 25 */
  in.block_gbps = 50;             /* blocks that move more: fewer of them */
  CHECK_EQ(tune_blocks(&in), 9);
  in.link_gbps = 24; /* PCIe through host memory: one block is plenty */
  CHECK_EQ(tune_blocks(&in), 1);
  in.link_gbps = 10000; /* never more than 64 */
  CHECK_EQ(tune_blocks(&in), TUNE_MAX_BLOCKS);
}

TEST(small_transfers_take_one_block_per_block_bytes) {
  struct tune_blocks_in in = nvlink(0);
  CHECK_EQ(tune_blocks(&in), 1);
  in.bytes = 1;
  CHECK_EQ(tune_blocks(&in), 1);
  in.bytes = 128 << 10;
  CHECK_EQ(tune_blocks(&in), 1);
  in.bytes = (128 << 10) + 1;
  CHECK_EQ(tune_blocks(&in), 2);
  in.bytes = 1 << 20;
  CHECK_EQ(tune_blocks(&in), 8);
  in.bytes = 4 << 20;
  CHECK_EQ(tune_blocks(&in), 18);
}

TEST(efficiency_halves) {
  struct tune_blocks_in in = nvlink(1 << 30);
  in.efficiency = 1;
  CHECK_EQ(tune_blocks(&in), 9);
  in.bytes = 1;
  CHECK_EQ(tune_blocks(&in), 1);
  in.bytes = 3 * (128 << 10);
  CHECK_EQ(tune_blocks(&in), 2);
}

TEST(limits_apply_last) {
  struct tune_blocks_in in = nvlink(1 << 30);
  in.max = 2;
  CHECK_EQ(tune_blocks(&in), 2);
  in.max = 1;
  CHECK_EQ(tune_blocks(&in), 1);
  in.max = 0, in.min = 32;
  CHECK_EQ(tune_blocks(&in), 32);
  in.bytes = 1;
  CHECK_EQ(tune_blocks(&in), 32);
  in.min = 8, in.max = 4; /* the maximum wins */
  CHECK_EQ(tune_blocks(&in), 4);
  in.min = 0, in.max = 1000;
  in.bytes = 1 << 30, in.link_gbps = 1e6;
  CHECK_EQ(tune_blocks(&in), TUNE_MAX_BLOCKS);
}

TEST(cta_limits_precedence) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  struct tune_cta_limits l = tune_cta_limits(-1, -1, NULL, -1, -1);
  CHECK_EQ(l.min, 1);
  CHECK_EQ(l.max, 64);
  CHECK_EQ(l.policy, NCCL_CTA_POLICY_DEFAULT);
  l = tune_cta_limits(-1, -1, &cfg, -1, -1); /* an untouched config changes nothing */
  CHECK_EQ(l.min, 1);
  CHECK_EQ(l.max, 64);
  CHECK_EQ(l.policy, NCCL_CTA_POLICY_DEFAULT);
  l = tune_cta_limits(-1, -1, NULL, 4, 16); /* NCCL_MIN/MAX_NCHANNELS */
  CHECK_EQ(l.min, 4);
  CHECK_EQ(l.max, 16);
  cfg.minCTAs = 2, cfg.maxCTAs = 8, cfg.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  l = tune_cta_limits(-1, -1, &cfg, 4, 16); /* the config over NCCL_*_NCHANNELS */
  CHECK_EQ(l.min, 2);
  CHECK_EQ(l.max, 8);
  CHECK_EQ(l.policy, NCCL_CTA_POLICY_EFFICIENCY);
  l = tune_cta_limits(3, 5, &cfg, 4, 16); /* the environment over the config */
  CHECK_EQ(l.min, 3);
  CHECK_EQ(l.max, 5);
  l = tune_cta_limits(-1, 1, &cfg, -1, -1); /* NCCL_MAX_CTAS=1 lowers the config's minimum */
  CHECK_EQ(l.min, 1);
  CHECK_EQ(l.max, 1);
  l = tune_cta_limits(100, 500, NULL, -1, -1); /* clamped to 64 */
  CHECK_EQ(l.min, 64);
  CHECK_EQ(l.max, 64);
  cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  l = tune_cta_limits(-1, -1, &cfg, -1, -1);
  CHECK_EQ(l.policy, NCCL_CTA_POLICY_ZERO);
}

/* The copy-engine path: two ranks staging through 64 KB regions, at most 32 rounds. */
static struct tune_ce_in ce_in(enum tune_ce_mode mode, size_t bytes) {
  struct tune_ce_in in = {mode, 0, 1, bytes, 64 << 10, 0, 32, 1 << 20};
  return in;
}

TEST(ce_path_limits) {
  struct tune_ce_in in = ce_in(TUNE_CE_OFF, 1 << 20);
  CHECK_EQ(tune_ce_wanted(&in), 0);
  in = ce_in(TUNE_CE_ALL, 4096);
  CHECK_EQ(tune_ce_wanted(&in), 1);
  in.bytes = (size_t)32 * (64 << 10); /* 32 rounds */
  CHECK_EQ(tune_ce_wanted(&in), 1);
  in.bytes++; /* 33 */
  CHECK_EQ(tune_ce_wanted(&in), 0);
  in = ce_in(TUNE_CE_ALL, 64 << 10), in.captured = 1; /* one round in a graph */
  CHECK_EQ(tune_ce_wanted(&in), 1);
  in.bytes++;
  CHECK_EQ(tune_ce_wanted(&in), 0);
  in = ce_in(TUNE_CE_ALL, 0); /* Send/Recv: on unless captured */
  CHECK_EQ(tune_ce_wanted(&in), 1);
  in.captured = 1;
  CHECK_EQ(tune_ce_wanted(&in), 0);
  in = ce_in(TUNE_CE_TUNED, (1 << 20) - 1); /* MONEL_CE_MIN_BYTES */
  CHECK_EQ(tune_ce_wanted(&in), 0);
  in.bytes++;
  CHECK_EQ(tune_ce_wanted(&in), 1);
  in = ce_in(TUNE_CE_TUNED, 1 << 20), in.usable = 0; /* not set up: only when forced */
  CHECK_EQ(tune_ce_wanted(&in), 0);
  in.forced = 1, in.mode = TUNE_CE_ALL;
  CHECK_EQ(tune_ce_wanted(&in), 1); /* gpu_ce_run then says why it cannot */
}

/* A comm of one rank has no staging region: it copies to itself in one round, whatever the
 * size. (Its region of 0 once divided the size: MONEL_COPY_ENGINE=1 on one GPU raised SIGFPE.) */
TEST(ce_path_one_rank) {
  struct tune_ce_in in = ce_in(TUNE_CE_ALL, 1 << 30);
  in.region = 0;
  CHECK_EQ(tune_ce_wanted(&in), 1);
  in.captured = 1;
  CHECK_EQ(tune_ce_wanted(&in), 1);
}

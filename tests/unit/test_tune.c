/* core/tune.c's thread-block model and CTA limits: the fewest blocks that fill the link, one per
 * block_bytes below that, half with the efficiency policy, the limits applied last; the limits'
 * precedence (environment over config over NCCL_*_NCHANNELS) and their clamping to 1..64. */
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

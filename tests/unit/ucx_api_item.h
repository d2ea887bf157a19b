/* SPDX-License-Identifier: BSD-3-Clause */
/* One entry of tests/unit/ucx_api_list.h as each side of tests/unit/test_ucx_api.c computes
 * it. */
#ifndef TESTS_UNIT_UCX_API_ITEM_H
#define TESTS_UNIT_UCX_API_ITEM_H
struct ucx_item {
  const char* what;
  long long value;
};
extern const struct ucx_item ucx_items_monel[];
#endif

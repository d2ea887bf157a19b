/* SPDX-License-Identifier: BSD-3-Clause */
/* Monel's version, build description and the VERSION banner (printed once per process). */
#ifndef MONEL_CORE_VERSION_H
#define MONEL_CORE_VERSION_H
/* The NCCL release whose API Monel implements in full, which ncclGetVersion reports: 2.32.3, whose
 * types and functions include/nccl.h declares, each with its behaviour on both engines (the GPU
 * engine's proven by tests/gpu/api232.sh; docs/API232.md). */
#define VERSION_NCCL_MAJOR 2
#define VERSION_NCCL_MINOR 32
#define VERSION_NCCL_PATCH 3
#define VERSION_NCCL_CODE  23203
const char* version_string(void);
void version_banner(void);
#endif

/* Monel's version, build description and the VERSION banner (printed once per process). */
#ifndef MONEL_CORE_VERSION_H
#define MONEL_CORE_VERSION_H
/* The NCCL release whose API Monel implements in full, which ncclGetVersion reports. include/nccl.h
 * declares 2.32.3 (its types and functions are all there, each with its behaviour on both
 * engines), but the GPU engine's 2.32 paths (launch-completion events, a per-call
 * NCCL_CTA_POLICY_ZERO, peer window pointers, ...) have not run on a GPU yet (docs/API232.md;
 * tests/gpu/api232.sh proves them), so the library reports 2.28.9 until they have. */
#define VERSION_NCCL_MAJOR 2
#define VERSION_NCCL_MINOR 28
#define VERSION_NCCL_PATCH 9
#define VERSION_NCCL_CODE  22809
const char* version_string(void);
void version_banner(void);
#endif

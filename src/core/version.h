/* Monel's version, build description and the VERSION banner (printed once per process). */
#ifndef MONEL_CORE_VERSION_H
#define MONEL_CORE_VERSION_H
/* The NCCL release whose API Monel implements in full, which ncclGetVersion reports. include/nccl.h
 * declares 2.32.3 (its types and functions are all there), but some of 2.32's functions still
 * refuse with a sentence (the device API, launch-completion events, one-sided calls on the GPU
 * engine), so the library reports 2.28.9 until they work. */
#define VERSION_NCCL_MAJOR 2
#define VERSION_NCCL_MINOR 28
#define VERSION_NCCL_PATCH 9
#define VERSION_NCCL_CODE  22809
const char* version_string(void);
void version_banner(void);
#endif

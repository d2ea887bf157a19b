/* Monel's version, build description and the VERSION banner (printed once per process). */
#ifndef MONEL_CORE_VERSION_H
#define MONEL_CORE_VERSION_H
const char* version_string(void);
void version_banner(void);
/* The device a new rank uses by default (-1: none; the CPU engine), and the i-th local device
 * for ncclCommInitAll without a device list. Defined by the engine glue (core/engine.c). */
/* 0 when MONEL_ENGINE=cpu or the build has no CUDA engine: no comm or allocation uses a GPU. */
int engine_gpu_allowed(void);
int engine_default_device(void);
int engine_gpu_count(void);
#endif

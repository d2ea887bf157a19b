/* Monel's version, build description and the VERSION banner (printed once per process). */
#ifndef MONEL_CORE_VERSION_H
#define MONEL_CORE_VERSION_H
const char* version_string(void);
void version_banner(void);
#endif

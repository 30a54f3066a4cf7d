/* Fault injection for the tuner's crash and hang isolation tests, in test
 * builds only (CMake option ACL_FAULT_INJECTION; never in a board's launcher).
 * ACL_LAUNCHER_FAULTS="ALGORITHM=segv|abort|hang,..." makes a measure request
 * of that algorithm kill the launcher with SIGSEGV or abort(), or never return. */
#ifndef ACL_LAUNCHER_FAULT_H
#define ACL_LAUNCHER_FAULT_H

#include "json.h"

#ifdef ACL_FAULT_INJECTION
void fault_inject(const json_value *measure_request);
#else
static inline void fault_inject(const json_value *measure_request) { (void)measure_request; }
#endif

#endif

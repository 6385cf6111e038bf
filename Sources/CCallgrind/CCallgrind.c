#include "CCallgrind.h"

#if defined(__has_include)
#  if __has_include(<valgrind/callgrind.h>)
#    include <valgrind/callgrind.h>
#    define STORAGE_BENCH_HAS_CALLGRIND 1
#  endif
#endif

#ifdef STORAGE_BENCH_HAS_CALLGRIND

int storage_bench_callgrind_built_in(void) { return 1; }

int storage_bench_running_on_valgrind(void) { return RUNNING_ON_VALGRIND ? 1 : 0; }

void storage_bench_callgrind_toggle_collect(void) { CALLGRIND_TOGGLE_COLLECT; }

void storage_bench_callgrind_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }

#else

int storage_bench_callgrind_built_in(void) { return 0; }

int storage_bench_running_on_valgrind(void) { return 0; }

void storage_bench_callgrind_toggle_collect(void) {}

void storage_bench_callgrind_dump(const char *name) { (void)name; }

#endif

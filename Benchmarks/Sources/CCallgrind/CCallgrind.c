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

// The C allocator's heap statistics, for the harness's memory figures.
#include <stdlib.h>  // defines __GLIBC__ on glibc
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>

long long storage_bench_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
}

void storage_bench_heap_trim(void) { (void)malloc_trim(0); }

#else

long long storage_bench_heap_in_use(void) { return -1; }

void storage_bench_heap_trim(void) {}

#endif

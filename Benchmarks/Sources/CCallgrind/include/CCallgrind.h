// Callgrind client requests for the benchmark harness: switch the collection of
// costs on and off around each timed region, and write the costs of one
// operation to a dump named after it. Outside valgrind every call does nothing
// (a few instructions).
#ifndef CCALLGRIND_H
#define CCALLGRIND_H

/// 1 when this library was built with valgrind's headers (the requests are
/// real), 0 when they were missing at build time (every request does nothing).
int storage_bench_callgrind_built_in(void);

/// 1 when the process runs under valgrind, else 0.
int storage_bench_running_on_valgrind(void);

/// Toggles callgrind's collection of costs (off at start with --collect-atstart=no).
void storage_bench_callgrind_toggle_collect(void);

/// Writes the costs collected since the last dump to a new dump whose
/// description is `name`, and resets them.
void storage_bench_callgrind_dump(const char *name);

/// The bytes the C allocator has handed out and not yet freed (glibc's
/// `mallinfo2`: `uordblks + hblkhd`), or -1 where it cannot say.
long long storage_bench_heap_in_use(void);

/// Returns the allocator's free memory to the system (`malloc_trim(0)`),
/// where it can; otherwise does nothing.
void storage_bench_heap_trim(void);

#endif

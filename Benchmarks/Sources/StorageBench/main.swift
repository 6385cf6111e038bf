// The `storage-bench` executable: argument parsing only; the work is in StorageBenchKit.
//
// A synchronous main, also for the commands whose work is `async` (they wait
// for it with `waitForTask`): valgrind, which counts the instructions of
// `run --instructions` and `async-cost`, cannot run the dispatch main loop that
// an `async` main starts.
StorageBench.main()

// The `storage-bench` executable: argument parsing only; the work is in StorageBenchKit.
StorageBench.main()

print("storage-bench")

import DialogGraph

/// What `storage-bench --version` prints: the workload version the harness
/// runs and the report format it writes, the two things that decide whether
/// two reports can be compared, and how it was compiled.
public enum StorageBenchVersion {
    /// `storage-bench dialog-graph-v1, report columns 50, release build`.
    public static var text: String {
        "storage-bench \(WorkloadData.name), report columns \(ReportRow.columns.count), \(SystemInfo.build) build"
    }
}

// swift-tools-version: 6.0
//
// The benchmark harness of swift-dao-storage: `storage-bench` runs one workload
// (the dialog/message graph, Sources/DialogGraph) through the DAO on every
// adapter, beside each engine used directly (from Swift, from plain C, and
// GRDB), and writes reports; `record-cost` measures what a record's declaration
// costs. It depends on the library in the folder above, the way an app does.
//
//   swift build --package-path Benchmarks -c release --product storage-bench
//   swift run --package-path Benchmarks -c release storage-bench run

import PackageDescription

// A package reached by path is known by its folder's name (lowercased, without a
// `.git` suffix), so the library's products are named after the folder the
// repository was cloned into.
let library: String = {
    let folder = (Context.packageDirectory.split(separator: "/").dropLast().last ?? "").lowercased()
    return folder.hasSuffix(".git") ? String(folder.dropLast(4)) : folder
}()

let package = Package(
    name: "swift-dao-storage-benchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "storage-bench", targets: ["StorageBench"]),
        .executable(name: "record-cost", targets: ["RecordCost"]),
        // The harness, for a package that benchmarks a `Store` of its own.
        .library(name: "StorageBenchKit", targets: ["StorageBenchKit"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // The `grdb` reference backend.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // The PostgreSQL references (`postgres-raw`, COPY).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The workload: the dialog/message graph, its records and translators,
        // and the seeded generator (WORKLOAD.md). The library's tests and
        // examples build the same folder (Tests/DialogGraph links to it).
        .target(name: "DialogGraph", dependencies: [.product(name: "DAOCore", package: library)]),

        // Callgrind client requests (no-ops outside valgrind, and when built
        // without valgrind's headers).
        .target(name: "CCallgrind"),

        // The workload in plain C on libsqlite3 and liblmdb: the C reference
        // backends (`sqlite-c`, `lmdb-c`).
        .target(
            name: "CReference",
            dependencies: [.product(name: "CSQLite", package: library), .product(name: "CLMDB", package: library)],
            linkerSettings: [.linkedLibrary("sqlite3"), .linkedLibrary("lmdb")],
        ),

        // The harness: configuration, the runner, the load mixes, statistics, reports.
        .target(
            name: "StorageBenchKit",
            dependencies: [
                "DialogGraph", "CCallgrind",
                .product(name: "DAOCore", package: library),
                .product(name: "FileStorage", package: library),
                .product(name: "SQLiteStorage", package: library),
                .product(name: "LMDBStorage", package: library),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            // The built-in load mixes (`storage-bench load --mix ycsb-a`), as mix files.
            resources: [.copy("Load/Mixes")],
        ),
        // The reference backends: each engine's C API used directly, from Swift
        // and from plain C, GRDB, and PostgreSQL through postgres-nio.
        .target(
            name: "StorageBenchReference",
            dependencies: [
                "StorageBenchKit", "DialogGraph", "CReference",
                .product(name: "DAOCore", package: library),
                .product(name: "CSQLite", package: library),
                .product(name: "CLMDB", package: library),
                .product(name: "PostgresStorage", package: library),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
        ),
        .executableTarget(
            name: "StorageBench",
            dependencies: [
                "StorageBenchKit",
                "StorageBenchReference",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
        ),

        // What a record's declaration costs on every backend: the README way,
        // hand-written FieldwiseRecord code and @StoredRecord, side by side
        // (scripts/record-cost.sh counts instructions under callgrind).
        .executableTarget(
            name: "RecordCost",
            dependencies: [
                "CCallgrind",
                .product(name: "DAOCore", package: library),
                .product(name: "DAOMacros", package: library),
                .product(name: "SQLiteStorage", package: library),
                .product(name: "LMDBStorage", package: library),
                .product(name: "FileStorage", package: library),
            ],
        ),

        // Tests. TestSupport is the library's (Tests/TestSupport, linked here):
        // the backend list, temporary directories, the PostgreSQL server.
        .target(
            name: "TestSupport",
            dependencies: [
                "DialogGraph",
                .product(name: "DAOCore", package: library),
                .product(name: "DAOMacros", package: library),
                .product(name: "FileStorage", package: library),
                .product(name: "SQLiteStorage", package: library),
                .product(name: "LMDBStorage", package: library),
                .product(name: "PostgresStorage", package: library),
            ],
            path: "Tests/TestSupport"),
        .testTarget(name: "DialogGraphTests", dependencies: ["DialogGraph"]),
        .testTarget(name: "StorageBenchKitTests", dependencies: ["StorageBenchKit", "TestSupport"]),
        .testTarget(
            name: "StorageBenchReferenceTests",
            dependencies: [
                "StorageBenchReference", "StorageBenchKit", "DialogGraph", "TestSupport",
                .product(name: "CLMDB", package: library),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

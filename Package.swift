// swift-tools-version: 6.0
//
// A persistence library on the DAO pattern (plain objects, records, translators,
// storages, one generic DAO) with SQLite, LMDB, JSON, property-list and PostgreSQL
// adapters. The benchmark harness that runs one workload through the DAO on
// every adapter is a package of its own, Benchmarks/Package.swift, which
// depends on this one.

import CompilerPluginSupport
import PackageDescription


let package = Package(
    name: "swift-dao-storage",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DAOCore", targets: ["DAOCore"]),
        .library(name: "FileStorage", targets: ["FileStorage"]),
        .library(name: "SQLiteStorage", targets: ["SQLiteStorage"]),
        .library(name: "LMDBStorage", targets: ["LMDBStorage"]),
        .library(name: "PostgresStorage", targets: ["PostgresStorage"]),
        .library(name: "DAOMacros", targets: ["DAOMacros"]),
        // The engines' C APIs as the adapters import them, for code that calls an
        // engine directly beside its adapter (the harness's raw references).
        .library(name: "CSQLite", targets: ["CSQLite"]),
        .library(name: "CLMDB", targets: ["CLMDB"]),
        // The examples (Examples/) are executable targets, not products:
        // `swift run observe-table`, `swift run reader-writer`.
    ],
    dependencies: [
        // TLS of the PostgreSQL adapter (PostgresStorage); the other adapters do not link it.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.25.0"),
        // The PostgreSQL adapter (PostgresStorage).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Only for the `@StoredRecord` macro (DAOMacros); DAOCore and the adapters do not need it.
        .package(url: "https://github.com/swiftlang/swift-syntax", "602.0.0"..<"604.0.0"),
        // Only for `make docs` (swift package generate-documentation); nothing links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C libraries, reached through system-library targets.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),

        // The library.
        .target(name: "CCRC32C"),
        // Lifetimes: `RecordView` hands out spans whose lifetime is the view's
        // (`@_lifetime(borrow self)`); callers need no flag to use them.
        .target(
            name: "DAOCore", dependencies: ["CCRC32C"],
            swiftSettings: [.enableExperimentalFeature("Lifetimes")]),
        .target(name: "FileStorage", dependencies: ["DAOCore"]),
        .target(name: "SQLiteStorage", dependencies: ["DAOCore", "CSQLite"]),
        .target(name: "LMDBStorage", dependencies: ["DAOCore", "CLMDB"]),
        .target(
            name: "PostgresStorage",
            dependencies: [
                "DAOCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),

        // `@StoredRecord`: derives a record's entity and its fieldwise reading and
        // writing from its stored properties. The declarations live in DAOMacros;
        // the compiler plugin that expands them in DAOMacrosPlugin.
        .macro(
            name: "DAOMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ],
        ),
        .target(name: "DAOMacros", dependencies: ["DAOCore", "DAOMacrosPlugin"]),

        // Examples.
        .executableTarget(
            name: "observe-table",
            dependencies: ["DAOCore", "DialogGraph", "FileStorage", "SQLiteStorage", "LMDBStorage"],
            path: "Examples/ObserveTable",
        ),
        // A reader task and a writer task through the async API, on any backend.
        .executableTarget(
            name: "reader-writer",
            dependencies: ["DAOCore", "DialogGraph", "FileStorage", "SQLiteStorage", "LMDBStorage", "PostgresStorage"],
            path: "Examples/ReaderWriter",
        ),

        // Tests.
        // The dialog/message domain and its seeded generator: the benchmark's
        // workload (Benchmarks/Sources/DialogGraph, which this folder links to),
        // and the records most tests and both examples store. Not a product.
        .target(name: "DialogGraph", dependencies: ["DAOCore"], path: "Tests/DialogGraph"),
        // The tests' second process (another process growing an LMDB map,
        // holding an SQLite write lock, a writer to kill, the crash and
        // corruption tests' writer and checker); built with the tests.
        .executableTarget(
            name: "StoreHelper",
            dependencies: ["DAOCore", "DialogGraph", "FileStorage", "LMDBStorage", "SQLiteStorage", "CSQLite", "TestSupport"],
            path: "Tests/StoreHelper",
        ),
        // What several test targets and the helper share: the list of the
        // backends, temporary directories, the driver of StoreHelper, record
        // types more than one target stores.
        .target(
            name: "TestSupport",
            dependencies: ["DAOCore", "DAOMacros", "DialogGraph", "FileStorage", "SQLiteStorage", "LMDBStorage", "PostgresStorage"],
            path: "Tests/TestSupport"),
        .testTarget(
            name: "ConformanceTests",
            dependencies: [
                "DAOCore", "DAOMacros", "DialogGraph", "FileStorage", "SQLiteStorage", "LMDBStorage", "PostgresStorage",
                "TestSupport",
            ],
        ),
        .testTarget(name: "DAOCoreTests", dependencies: ["DAOCore", "DialogGraph"]),
        .testTarget(
            name: "DAOMacrosTests",
            dependencies: [
                "DAOCore", "DAOMacros", "DAOMacrosPlugin", "DialogGraph",
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
            ]),
        .testTarget(name: "FileStorageTests", dependencies: ["FileStorage", "DialogGraph", "TestSupport"]),
        .testTarget(name: "SQLiteStorageTests", dependencies: ["SQLiteStorage", "DialogGraph", "TestSupport"]),
        .testTarget(name: "LMDBStorageTests", dependencies: ["LMDBStorage", "DialogGraph", "TestSupport"]),
        .testTarget(
            name: "PostgresStorageTests",
            dependencies: [
                "PostgresStorage", "DAOCore", "DAOMacros", "DialogGraph", "TestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
        .testTarget(name: "CrashTests", dependencies: ["StoreHelper", "TestSupport"]),
        // An outside client's trial: another domain declared the README's way,
        // on every backend, with damaged files and killed writers.
        .testTarget(
            name: "ClientTrialTests",
            dependencies: [
                "DAOCore", "DAOMacros", "FileStorage", "SQLiteStorage", "LMDBStorage", "TestSupport", "StoreHelper",
            ]),
    ],
    swiftLanguageModes: [.v6]
)

import DAOCore
import TestSupport
import Foundation
import Testing

@testable import StorageBenchKit

@Suite struct ConfigurationTests {
    @Test func sizesParse() throws {
        #expect(try BenchSize(parsing: "1000x100") == BenchSize(dialogs: 1000, messagesPerDialog: 100))
        #expect(try BenchSize(parsing: "10X3").description == "10x3")
        #expect(
            try BenchSize.parseSweep("100x10, 1000x100,100x10").map(\.description) == ["100x10", "1000x100"])
    }

    @Test(arguments: ["", "100", "x10", "100x", "0x10", "10x0", "-1x5", "axb", "10x10x10", "100000000x1"])
    func badSizesAreRejected(_ text: String) {
        #expect(throws: ConfigurationError.self) { try BenchSize.parseSweep(text) }
    }

    @Test func countsOutOfRangeAreRejected() {
        #expect(throws: ConfigurationError.self) { try BenchSize(dialogs: 0, messagesPerDialog: 1) }
        #expect(throws: ConfigurationError.self) { try BenchSize(dialogs: 1, messagesPerDialog: -3) }
    }

    /// A negative, a too large (however many digits) or a malformed count
    /// gets the option's range, never a parser's generic message.
    @Test func everyBadCountGetsItsRange() throws {
        #expect(try parseCount("6", option: "--iterations", in: 1...1000) == 6)
        #expect(try parseCount(" +7 ", option: "--iterations", in: 1...1000) == 7)
        #expect(try parseCount("18446744073709551615", option: "--seed", in: UInt64.min...UInt64.max) == .max)
        for text in ["-5", "0", "1001", "99999999999999999999999", "-99999999999999999999999", "1e3", "5.0", "", "six"] {
            let error = try #require(throws: ConfigurationError.self) {
                try parseCount(text, option: "--iterations", in: 1...1000)
            }
            #expect(error.message == "--iterations must be a whole number between 1 and 1000, not \(text)")
        }
        let seed = try #require(throws: ConfigurationError.self) {
            try parseCount("-1", option: "--seed", in: UInt64.min...UInt64.max)
        }
        #expect(seed.message == "--seed must be a whole number between 0 and 18446744073709551615, not -1")
        // Sizes: a count of any length is a range, not a malformed size.
        for (text, says) in [
            ("-5x10", "the number of dialogs must be between 1 and 10000000, not -5"),
            ("99999999999999999999999x10", "the number of dialogs must be between 1 and 10000000, not 99999999999999999999999"),
            ("10x-99999999999999999999999", "the number of messages per dialog must be between 1 and 10000000, not -99999999999999999999999"),
            ("1e3x10", "'1e3x10' is not a size; write DIALOGSxMESSAGES, e.g. 1000x100"),
        ] {
            let error = try #require(throws: ConfigurationError.self) { try BenchSize.parseSweep(text) }
            #expect(error.message == says)
        }
    }

    /// `--dialogs` and `--messages-per-dialog` as given on the command line
    /// (run, migrate, observe): each checked as text against its range.
    @Test func sizeOptionsGetTheirRange() throws {
        #expect(try parseSize("100", "10") == BenchSize(dialogs: 100, messagesPerDialog: 10))
        for (dialogs, messages, says) in [
            ("-5", "10", "--dialogs must be a whole number between 1 and 10000000, not -5"),
            ("99999999999999999999", "10", "--dialogs must be a whole number between 1 and 10000000, not 99999999999999999999"),
            ("10", "1e3", "--messages-per-dialog must be a whole number between 1 and 10000000, not 1e3"),
            ("10", "0", "--messages-per-dialog must be a whole number between 1 and 10000000, not 0"),
        ] {
            let error = try #require(throws: ConfigurationError.self) { try parseSize(dialogs, messages) }
            #expect(error.message == says)
        }
    }

    @Test func operationsParseInWorkloadOrder() throws {
        #expect(try BenchOperation.parseList("query,persist") == [.persist, .query])
        #expect(try BenchOperation.parseList("all") == BenchOperation.workload)
        #expect(throws: ConfigurationError.self) { try BenchOperation.parseList("persist,fly") }
        #expect(throws: ConfigurationError.self) { try BenchOperation.parseList(" , ") }
    }

    @Test func backendsAreSelectedByName() throws {
        let registry = TestBackends.registry
        #expect(try registry.select("all").map(\.name) == registry.names)
        #expect(try registry.select("broken,memory").map(\.name) == ["memory", "broken"])
        #expect(throws: ConfigurationError.self) { try registry.select("memory,oracle") }
        #expect(throws: ConfigurationError.self) { try registry.select("") }
    }

    @Test func theStandardRegistryHasTheBackendsThatHaveLanded() {
        let names = BackendRegistry.standard.names
        #expect(names == ["json", "plist", "sqlite", "lmdb"])
        #expect(Set(names).count == names.count)
    }

    @Test func formatsAndDurabilitiesParse() throws {
        #expect(try ReportFormat.parseList("csv,markdown,csv") == [.csv, .markdown])
        #expect(throws: ConfigurationError.self) { try ReportFormat.parseList("xml") }
        #expect(try parseDurabilities("none,full") == [Durability.none, .full])
        #expect(throws: ConfigurationError.self) { try parseDurabilities("fsync") }
    }

    @Test func thresholdsParseAsFractions() throws {
        #expect(try parseThreshold("10%") == 0.1)
        #expect(try parseThreshold("25") == 0.25)
        #expect(try parseThreshold("0.05") == 0.05)
        #expect(try parseThreshold("0%") == 0)
        for bad in ["", "ten", "-5%", "5000%", "nan"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try parseThreshold(bad) }
        }
        let negative = try #require(throws: ConfigurationError.self) { try parseThreshold("-5", option: "--threshold") }
        #expect(negative.message == "--threshold must be between 0% and 1000%, not -5")
    }

    @Test func aPrecisionIsBetweenNothingAndAHundredPercent() throws {
        #expect(try parsePrecision("3%") == 0.03)
        #expect(try parsePrecision("0.5") == 0.5)
        for bad in ["150", "150%", "100%", "0%", "-3%", "-5", "three"] {
            let error = try #require(throws: ConfigurationError.self, "\(bad)") { try parsePrecision(bad) }
            #expect(error.message == "--precision must be more than 0% and less than 100%, e.g. 3%, not \(bad)")
        }
        let size = try BenchSize(dialogs: 2, messagesPerDialog: 2)
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [size], precision: 1.5)
        }
    }

    @Test func runConfigurationChecksItsCounts() throws {
        let size = try BenchSize(dialogs: 2, messagesPerDialog: 2)
        let backends = [TestBackends.memory]
        #expect(throws: ConfigurationError.self) { try RunConfiguration(backends: backends, sizes: [size], iterations: 0) }
        #expect(throws: ConfigurationError.self) { try RunConfiguration(backends: backends, sizes: [size], warmup: -1) }
        #expect(throws: ConfigurationError.self) { try RunConfiguration(backends: [], sizes: [size]) }
        #expect(throws: ConfigurationError.self) { try RunConfiguration(backends: backends, sizes: []) }
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: backends, sizes: [size], operations: [])
        }
    }

    /// The files a command wrote take one line: one folder named once, the
    /// extensions of one name in braces, a file elsewhere by its path.
    @Test func theWrittenFilesAreOneLine() {
        func url(_ path: String) -> URL { URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: "/tmp/bench/")) }
        let run = ReportWriter.wroteLines(
            [url("results/r1.csv"), url("results/latest.csv"), url("results/r1.html"), url("results/report.html")])
        #expect(run == "wrote results/r1.{csv,html}, latest.csv, report.html\n")
        let load = ReportWriter.wroteLines(
            [url("results/load-1.csv"), url("results/load-1.json"), url("other/load-1.html"), url("results/README")])
        #expect(load == "wrote results/load-1.{csv,json}, other/load-1.html, README\n")
        #expect(ReportWriter.wroteLines([]) == "")
    }

    @Test func anOutputThatIsADirectoryIsRejected() throws {
        try withTemporaryDirectory { directory in
            #expect(throws: ConfigurationError.self) { try ReportWriter.validate(directory) }
            try ReportWriter.validate(directory.appendingPathComponent("sub/run.csv"))
        }
    }
}

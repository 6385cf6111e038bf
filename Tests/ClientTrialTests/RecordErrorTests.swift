import DAOCore
import Foundation
import TestSupport
import Testing

// A client's record that validates its own values: its `init(fields:)` and
// `init(from:)` refuse a grade over 100, and its `write(fields:)` and
// `encode(to:)` refuse a negative one. The README promises that every failure
// is a `StorageError`; so an error of the record's own reaches the caller
// wrapped (kind `decoding` or `encoding`, the record's error kept as
// `underlying`), on every backend.

struct GradeOutOfRange: Error, Equatable {
    let grade: Int64
}

struct GradedRecord: Record, FieldwiseRecord, Equatable {
    typealias PrimaryKey = String
    var id: String
    var grade: Int64

    static let entity = Entity<GradedRecord>("trial_graded", primaryKey: "id", \.id, fields: [Field("grade", \.grade)])

    init(id: String, grade: Int64) {
        self.id = id
        self.grade = grade
    }

    init(fields: inout some FieldReader) throws {
        id = try fields.decode()
        grade = try fields.decode()
        if grade > 100 { throw GradeOutOfRange(grade: grade) }
    }

    func write(fields: inout some FieldWriter) throws {
        if grade < 0 { throw GradeOutOfRange(grade: grade) }
        try fields.encode(id)
        try fields.encode(grade)
    }

    enum CodingKeys: String, CodingKey { case id, grade }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        grade = try container.decode(Int64.self, forKey: .grade)
        if grade > 100 { throw GradeOutOfRange(grade: grade) }
    }

    func encode(to encoder: any Encoder) throws {
        if grade < 0 { throw GradeOutOfRange(grade: grade) }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(grade, forKey: .grade)
    }
}

/// The same entity without the checks: how a value the checked type refuses
/// gets into the store (an older build wrote it, say).
struct LaxGradedRecord: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var grade: Int64

    static let entity = Entity<LaxGradedRecord>("trial_graded", primaryKey: "id", \.id, fields: [Field("grade", \.grade)])
}

@Suite("Client trial: a record's own errors reach the caller as StorageError")
struct RecordErrorTests {
    @Test("init(fields:) / init(from:) throwing on read is a .decoding StorageError", arguments: localBackends)
    func decodingError(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try backend.open(directory.url)
            defer { try? store.close() }  // test clean-up
            try store.anyStorage(for: LaxGradedRecord.self).persist([
                LaxGradedRecord(id: "ok", grade: 90), LaxGradedRecord(id: "too high", grade: 101),
            ])
        }
        let store = try backend.open(directory.url)
        defer { try? store.close() }  // test clean-up
        if backend.isFileStore {
            // The file stores decode every record when a storage is opened
            // (docs/ARCHITECTURE.md, "The file store"), so that is where the record refuses.
            let error = expectStorageError(.decoding) { _ = try store.anyStorage(for: GradedRecord.self) }
            #expect(error?.operation == .open)
            #expect(error?.entity == "trial_graded")
            #expect(error?.underlying as? GradeOutOfRange == GradeOutOfRange(grade: 101), "\(String(describing: error))")
            return
        }
        let graded = try store.anyStorage(for: GradedRecord.self)
        #expect(try graded.read(primaryKey: "ok") == GradedRecord(id: "ok", grade: 90))
        for read in [
            { _ = try graded.readAll() },
            { _ = try graded.read(primaryKey: "too high") },
            { _ = try graded.read(where: #Predicate { $0.grade > 95 }) },
        ] as [() throws -> Void] {
            let error = expectStorageError(.decoding) { try read() }
            #expect(error?.operation == .read)
            #expect(error?.entity == "trial_graded")
            #expect(error?.underlying as? GradeOutOfRange == GradeOutOfRange(grade: 101), "\(String(describing: error))")
        }
    }

    @Test("write(fields:) / encode(to:) throwing on persist is an .encoding StorageError; nothing is written",
          arguments: localBackends)
    func encodingError(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url)
        defer { try? store.close() }  // test clean-up
        let graded = try store.anyStorage(for: GradedRecord.self)
        let error = expectStorageError(.encoding) {
            try graded.persist([GradedRecord(id: "a", grade: 1), GradedRecord(id: "b", grade: -1)])
        }
        #expect(error?.operation == .persist)
        #expect(error?.entity == "trial_graded")
        #expect(error?.underlying as? GradeOutOfRange == GradeOutOfRange(grade: -1), "\(String(describing: error))")
        #expect(try graded.count() == 0)
    }
}

import DAOCore
import DAOMacros
import Foundation
import TestSupport
import Testing

// Declarations a client can get wrong in the clinic: one child type in two
// relations of a parent, and a relation to a child that names another owner
// (an optional or mistyped foreign key does not compile). A child names its
// owner through one foreign key, so neither can be stored as declared: the
// first lost the children of one relation to the other on every backend.
// Each backend must refuse both alike, with `schemaMismatch`, when the
// storage is opened.

@StoredRecord("cx_orders")
struct OrderRecord: Equatable {
    var id: String
    @Children(foreignKey: "orderId") var samples: [SampleRecord]
    @Children(foreignKey: "orderId") var repeats: [SampleRecord]
}

/// A sample, the child type of two relations of one parent.
@StoredRecord("cx_samples", ownedBy: OrderRecord.self)
struct SampleRecord: Equatable {
    var id: Int64
    var orderId: String
}

/// A second parent type that holds samples, which name another owner.
@StoredRecord("cx_batches")
struct BatchRecord: Equatable {
    var id: String
    @Children(foreignKey: "orderId") var samples: [SampleRecord]
}

/// What one backend does with the declarations.
func declarationTranscript(_ backend: TestBackend) throws -> [String] {
    let directory = try TemporaryDirectory()
    var lines: [String] = []
    func note(_ step: String, _ body: () throws -> String) { noteStep(step, in: &lines, body) }
    let store = try backend.open(directory.url)
    defer {
        do { try store.close() } catch { Issue.record("closing failed: \(error)") }
    }
    note("one child type in two relations") {
        let orders = try store.anyStorage(for: OrderRecord.self)
        try orders.persist([OrderRecord(id: "o", samples: [SampleRecord(id: 1, orderId: "o")],
                                        repeats: [SampleRecord(id: 2, orderId: "o")])])
        let read = try orders.read(primaryKey: "o")
        return "opened, samples \(read?.samples.map(\.id) ?? []), repeats \(read?.repeats.map(\.id) ?? [])"
    }
    note("a relation to a child owned by another entity") {
        let orders = try store.anyStorage(for: OrderRecord.self)
        let batches = try store.anyStorage(for: BatchRecord.self)
        try batches.persist([BatchRecord(id: "b", samples: [SampleRecord(id: 3, orderId: "b")])])
        return "opened, orders \(try orders.count()), batches \(try batches.count())"
    }
    return lines
}

@Suite("Client trial: clinic declarations a client can get wrong")
struct ClinicDeclarationTests {
    @Test("one child type in two relations, or a relation to another owner's child: refused on every backend",
          arguments: localBackends)
    func refused(backend: TestBackend) throws {
        let transcript = try declarationTranscript(backend)
        #expect(transcript == [
            "one child type in two relations: schemaMismatch",
            "a relation to a child owned by another entity: schemaMismatch",
        ], "on \(backend.name)")
    }
}

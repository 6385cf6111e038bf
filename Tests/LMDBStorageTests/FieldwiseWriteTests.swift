import DAOCore
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// A record that writes its fields by position, correctly or (by `mode`) in
/// one of the ways a hand-written `write(fields:)` can get wrong.
private struct Probe: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = Int64

    var id: Int64
    var mode: Int64
    var ratio: Double?
    var name: String

    static let entity = Entity<Probe>(
        "probes",
        primaryKey: "id", \.id,
        fields: [Field("mode", \.mode), Field("ratio", \.ratio), Field("name", \.name)],
        indexes: [Index("probes_by_ratio_name", on: ["ratio", "name"])])

    init(id: Int64, mode: Int64, ratio: Double?, name: String) {
        self.id = id
        self.mode = mode
        self.ratio = ratio
        self.name = name
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            id: try fields.decode(), mode: try fields.decode(), ratio: try fields.decodeIfPresent(),
            name: try fields.decode())
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        switch mode {
        case 1: try fields.encode(Double(mode))  // a real for an integer field
        case 2: try fields.encodeNil()  // nil for a field that is not optional
        case 5: try fields.encode(Double.nan)  // a NaN for an integer field: a real where an integer is declared
        default: try fields.encode(mode)
        }
        if let ratio { try fields.encode(ratio) } else { try fields.encodeNil() }
        if mode == 3 { return }  // one field short
        try fields.encode(name)
        if mode == 4 { try fields.encode(name) }  // one field too many
    }
}

@Suite("LMDB: records written field by field")
struct FieldwiseWriteTests {
    @Test("fields written by position round-trip, optionals and index keys included")
    func roundTrip() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let probes = try env.storage(for: Probe.self)
            let records = [
                Probe(id: 1, mode: 0, ratio: 0.5, name: "a"),
                Probe(id: -7, mode: 0, ratio: nil, name: "zoë\u{0}🚀"),
                Probe(id: 300, mode: 0, ratio: -2.5e-300, name: String(repeating: "x", count: 300)),
            ]
            try probes.persist(records)
            #expect(try probes.read(primaryKeys: [1, -7, 300]) == records)
            // The index entries were made from the written bytes.
            #expect(try probes.read(where: #Predicate { $0.ratio == nil }) == [records[1]])
            #expect(try probes.read(where: #Predicate { $0.ratio == 0.5 && $0.name == "a" }) == [records[0]])
            #expect(try probes.verify() == 3)
            // Replacing rewrites the index entry.
            try probes.persist([Probe(id: 1, mode: 0, ratio: 2, name: "b")])
            #expect(try probes.read(where: #Predicate { $0.ratio == 0.5 }).isEmpty)
            #expect(try probes.verify() == 3)
        }
    }

    @Test("a field of another storage class, a nil where none may be, too few or too many fields: refused, nothing stored")
    func refused() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let probes = try env.storage(for: Probe.self)
            for (mode, kind) in [
                (1, StorageError.Kind.encoding), (2, .encoding), (3, .schemaMismatch), (4, .schemaMismatch), (5, .encoding),
            ] {
                let good = Probe(id: 10, mode: 0, ratio: 1, name: "kept")
                let bad = Probe(id: 11, mode: Int64(mode), ratio: nil, name: "refused")
                let error = storageError { try probes.persist([good, bad]) }
                #expect(error?.kind == kind, "mode \(mode)")
                #expect(try probes.count() == 0, "mode \(mode)")
            }
        }
    }
}

/// A record whose positional reader refuses one value (`mode == 13`), so a
/// range read fails in the middle, after records were built in place.
private struct Picky: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = Int64

    struct Refused: Error {}

    var id: Int64
    var mode: Int64
    var name: String

    static let entity = Entity<Picky>(
        "pickies", primaryKey: "id", \.id, fields: [Field("mode", \.mode), Field("name", \.name)])

    init(id: Int64, mode: Int64, name: String) {
        self.id = id
        self.mode = mode
        self.name = name
    }

    init(fields: inout some FieldReader) throws {
        let id: Int64 = try fields.decode()
        let mode: Int64 = try fields.decode()
        let name: String = try fields.decode()
        guard mode != 13 else { throw Refused() }
        self.init(id: id, mode: mode, name: name)
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(mode)
        try fields.encode(name)
    }
}

@Suite("LMDB: records built in place")
struct InPlaceDecodingTests {
    @Test("a record refused in the middle of a range is an error; the records before it are released, later reads work")
    func refusedMidRange() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let pickies = try env.storage(for: Picky.self)
            let records = (1...40).map { Picky(id: Int64($0), mode: $0 == 30 ? 13 : Int64($0 % 3), name: "name \($0) " + String(repeating: "é", count: $0)) }
            try pickies.persist(records)
            // The record's own error reaches the caller as a `.decoding`
            // StorageError that keeps it, as on every backend.
            for read in [
                { _ = try pickies.read(where: nil) },
                { _ = try pickies.read(Query(where: #Predicate { $0.mode == 1 }, sortedBy: [SortDescriptor(\.name)])) },
            ] as [() throws -> Void] {
                let error = #expect(throws: StorageError.self) { try read() }
                #expect(error?.kind == .decoding)
                #expect(error?.underlying is Picky.Refused)
            }
            let kept = records.filter { $0.mode != 13 }
            #expect(try pickies.read(primaryKeys: kept.map(\.id)) == kept)
            #expect(try pickies.erase(primaryKeys: [30]) == 1)
            #expect(try pickies.read(where: nil) == kept)
            // Sorted by the keys read from the stored bytes, ties by primary key.
            let sorted = try pickies.read(Query(where: nil, sortedBy: [SortDescriptor(\.mode, order: .reverse)]))
            #expect(sorted == kept.sorted { ($0.mode, -$0.id) > ($1.mode, -$1.id) })
        }
    }
}

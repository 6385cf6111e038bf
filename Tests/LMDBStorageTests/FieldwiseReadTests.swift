import DAOCore
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// A record read by position with a field of every stored shape, optionals
/// among them, a text key, and text that is not ASCII.
private struct Sheet: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = String

    var id: String
    var title: String?
    var weight: Double?
    var pinned: Bool
    var payload: Data
    var count: Int64
    var due: Date?

    static let entity = Entity<Sheet>(
        "sheets",
        primaryKey: "id", \.id,
        fields: [
            Field("title", \.title), Field("weight", \.weight), Field("pinned", \.pinned),
            Field("payload", \.payload), Field("count", \.count), Field("due", \.due),
        ])

    init(id: String, title: String?, weight: Double?, pinned: Bool, payload: Data, count: Int64, due: Date?) {
        self.id = id
        self.title = title
        self.weight = weight
        self.pinned = pinned
        self.payload = payload
        self.count = count
        self.due = due
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            id: try fields.decode(), title: try fields.decodeIfPresent(), weight: try fields.decodeIfPresent(),
            pinned: try fields.decode(), payload: try fields.decode(), count: try fields.decode(),
            due: try fields.decodeIfPresent())
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(title)
        try fields.encode(weight)
        try fields.encode(pinned)
        try fields.encode(payload)
        try fields.encode(count)
        try fields.encode(due)
    }
}

/// A ``FieldwiseRecord`` is laid out while it is read, in one pass over its
/// value: what the separate layout refused (a value cut short, bytes after
/// the last field, a presence byte other than 0 or 1) is refused the same
/// way, as `corrupt`. Values of format 1 carry no checksum, so these reach
/// the reader itself.
@Suite struct FieldwiseReadTests {
    private let sheets = [
        Sheet(id: "a", title: "naïve 🚀 привет", weight: 2.5, pinned: true, payload: Data([0, 1, 255]),
              count: -300, due: Date(timeIntervalSinceReferenceDate: 12.25)),
        Sheet(id: "b\u{0}", title: nil, weight: nil, pinned: false, payload: Data(), count: Int64.max, due: nil),
        Sheet(id: "e\u{301}", title: String(repeating: "long text ", count: 500), weight: -1e300, pinned: true,
              payload: Data(repeating: 7, count: 300), count: Int64.min, due: nil),
    ]

    /// Stores `sheets`, then replaces each value by `change` of its format-1
    /// form (the format-2 value without its version byte and checksum,
    /// behind version byte 1), and returns what reading each back throws.
    private func readBack(_ change: ([UInt8]) -> [UInt8]) throws -> [StorageError?] {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let storage = try env.storage(for: Sheet.self)
            try storage.persist(sheets)
            var errors: [StorageError?] = []
            for sheet in sheets {
                let key = KeyCodec.encode(primaryKey: sheet.id)
                let stored: [UInt8] = try env.read(.read) { txn in try txn.copy(storage.table.main, key) ?? [] }
                #expect(stored.first == ValueSchema.formatVersion)
                let fields = Array(stored.dropFirst().dropLast(ValueSchema.checksumSize))
                let version1 = [ValueSchema.uncheckedFormatVersion] + change(fields)
                try env.write(.persist) { txn in try txn.put(storage.table.main, key, version1) }
                errors.append(
                    storageError {
                        let back = try storage.read(primaryKey: sheet.id)
                        #expect(back == sheet)
                    })
                try env.write(.persist) { txn in try txn.put(storage.table.main, key, stored) }
            }
            #expect(try storage.readAll().sorted { $0.id < $1.id } == sheets.sorted { $0.id < $1.id })
            return errors
        }
    }

    @Test("every field shape reads back from a value of format 1")
    func intact() throws {
        #expect(try readBack { $0 }.allSatisfy { $0 == nil })
    }

    @Test("a value cut short anywhere is corrupt")
    func cutShort() throws {
        let longest = 6_000
        for cut in [1, 2, 3, 5, 8, 9, 12, 20, 300, longest] {
            let errors = try readBack { Array($0.dropLast(min(cut, $0.count))) }
            #expect(errors.allSatisfy { $0?.kind == .corrupt }, "cut \(cut)")
        }
    }

    @Test("bytes after the last field are corrupt")
    func trailingBytes() throws {
        for extra in [[0], [1, 2, 3]] as [[UInt8]] {
            #expect(try readBack { $0 + extra }.allSatisfy { $0?.kind == .corrupt })
        }
    }

    /// A read of many records builds each one in its slot of the result
    /// (``ValueDecoder/decodeFieldwise(_:into:)``): bytes after the last
    /// field are found after the record was read into the slot, which is
    /// then emptied again, and the read throws `corrupt`; the records read
    /// before it are released with the buffer.
    @Test("bytes after the last field are corrupt when records are built in place")
    func trailingBytesInPlace() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let storage = try env.storage(for: Sheet.self)
            try storage.persist(sheets)
            for sheet in sheets {
                let key = KeyCodec.encode(primaryKey: sheet.id)
                let stored: [UInt8] = try env.read(.read) { txn in try txn.copy(storage.table.main, key) ?? [] }
                let fields = Array(stored.dropFirst().dropLast(ValueSchema.checksumSize))
                for extra in [[0], [1, 2, 3]] as [[UInt8]] {
                    let damaged = [ValueSchema.uncheckedFormatVersion] + fields + extra
                    try env.write(.persist) { txn in try txn.put(storage.table.main, key, damaged) }
                    #expect(storageError { _ = try storage.readAll() }?.kind == .corrupt, "\(sheet.id) + \(extra)")
                }
                try env.write(.persist) { txn in try txn.put(storage.table.main, key, stored) }
            }
            #expect(try storage.readAll().sorted { $0.id < $1.id } == sheets.sorted { $0.id < $1.id })
        }
    }

    @Test("a presence byte other than 0 or 1 is corrupt")
    func presenceByte() throws {
        // The first optional field (`title`) follows the key: its length
        // varint (one byte for these keys) and its bytes.
        let errors = try readBack { fields in
            var changed = fields
            let presence = 1 + Int(fields[0])
            changed[presence] = 2
            return changed
        }
        #expect(errors.allSatisfy { $0?.kind == .corrupt })
    }
}

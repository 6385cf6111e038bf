import DAOCore
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// A field of a `RawRepresentable` type.
private enum Mood: String, Codable, Sendable, Hashable, FieldValue {
    case calm, loud
}

/// A record read and written by position (``FieldwiseRecord``: through
/// ``PackedFieldReader`` and ``PackedFieldWriter``, specialized in this
/// module), with a field of every stored type, each also optional.
private struct Packed: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = String

    var id: String
    var int: Int
    var small: Int32
    var real: Double
    var flag: Bool
    var when: Date
    var bytes: Data
    var text: String
    var uuid: UUID
    var mood: Mood
    var optInt: Int?
    var optReal: Double?
    var optFlag: Bool?
    var optWhen: Date?
    var optBytes: Data?
    var optText: String?
    var optMood: Mood?

    static let entity = Entity<Packed>("packed", primaryKey: "id", \.id, fields: fieldList())

    static func fieldList<R: Record>() -> [Field<R>] where R: PackedShape {
        [
            Field("int", \R.int), Field("small", \R.small), Field("real", \R.real), Field("flag", \R.flag),
            Field("when", \R.when), Field("bytes", \R.bytes), Field("text", \R.text), Field("uuid", \R.uuid),
            Field("mood", \R.mood), Field("optInt", \R.optInt), Field("optReal", \R.optReal),
            Field("optFlag", \R.optFlag), Field("optWhen", \R.optWhen), Field("optBytes", \R.optBytes),
            Field("optText", \R.optText), Field("optMood", \R.optMood),
        ]
    }

    init(fields: inout some FieldReader) throws {
        id = try fields.decode()
        int = try fields.decode()
        small = try fields.decode()
        real = try fields.decode()
        flag = try fields.decode()
        when = try fields.decode()
        bytes = try fields.decode()
        text = try fields.decode()
        uuid = try fields.decode()
        mood = try fields.decode()
        optInt = try fields.decodeIfPresent()
        optReal = try fields.decodeIfPresent()
        optFlag = try fields.decodeIfPresent()
        optWhen = try fields.decodeIfPresent()
        optBytes = try fields.decodeIfPresent()
        optText = try fields.decodeIfPresent()
        optMood = try fields.decode()
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(int)
        try fields.encode(small)
        try fields.encode(real)
        try fields.encode(flag)
        try fields.encode(when)
        try fields.encode(bytes)
        try fields.encode(text)
        try fields.encode(uuid)
        try fields.encode(mood)
        try fields.encodeIfPresent(optInt)
        try fields.encodeIfPresent(optReal)
        try fields.encodeIfPresent(optFlag)
        try fields.encodeIfPresent(optWhen)
        try fields.encodeIfPresent(optBytes)
        try fields.encodeIfPresent(optText)
        try fields.encode(optMood)
    }

    init(keyed: Keyed) {
        (id, int, small, real, flag, when, bytes, text, uuid, mood) = (
            keyed.id, keyed.int, keyed.small, keyed.real, keyed.flag, keyed.when, keyed.bytes, keyed.text,
            keyed.uuid, keyed.mood
        )
        (optInt, optReal, optFlag, optWhen, optBytes, optText, optMood) = (
            keyed.optInt, keyed.optReal, keyed.optFlag, keyed.optWhen, keyed.optBytes, keyed.optText,
            keyed.optMood
        )
    }
}

/// The same entity as ``Packed``, read and written through `Codable` only.
private struct Keyed: Record, Hashable, PackedShape {
    typealias PrimaryKey = String

    var id: String
    var int: Int
    var small: Int32
    var real: Double
    var flag: Bool
    var when: Date
    var bytes: Data
    var text: String
    var uuid: UUID
    var mood: Mood
    var optInt: Int?
    var optReal: Double?
    var optFlag: Bool?
    var optWhen: Date?
    var optBytes: Data?
    var optText: String?
    var optMood: Mood?

    static let entity = Entity<Keyed>("packed", primaryKey: "id", \.id, fields: Packed.fieldList())
}

/// The stored properties both records share, for their one field list.
private protocol PackedShape {
    var int: Int { get }
    var small: Int32 { get }
    var real: Double { get }
    var flag: Bool { get }
    var when: Date { get }
    var bytes: Data { get }
    var text: String { get }
    var uuid: UUID { get }
    var mood: Mood { get }
    var optInt: Int? { get }
    var optReal: Double? { get }
    var optFlag: Bool? { get }
    var optWhen: Date? { get }
    var optBytes: Data? { get }
    var optText: String? { get }
    var optMood: Mood? { get }
}

extension Packed: PackedShape {}

/// The values written by position (``PackedFieldWriter``) and read by
/// position (``PackedFieldReader``) are the bytes the `Codable` path writes
/// and reads: one layout on disk, whichever way a record type is declared.
@Suite struct PackedValueTests {
    private static let uuid = UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8") ?? UUID()

    private let samples: [Keyed] = [
        Keyed(
            id: "all", int: Int.max, small: Int32.min, real: 0.1, flag: true,
            when: Date(timeIntervalSinceReferenceDate: -1e9 + 0.123), bytes: Data([0, 1, 0x80, 0xFF]),
            text: "naïve 🚀 привет \u{0} e\u{301}", uuid: uuid, mood: .loud, optInt: Int.min, optReal: -1e300,
            optFlag: false, optWhen: Date(timeIntervalSinceReferenceDate: 0), optBytes: Data(), optText: "",
            optMood: .calm),
        Keyed(
            id: "none\u{0}", int: 0, small: 0, real: 0, flag: false, when: Date(timeIntervalSinceReferenceDate: 0),
            bytes: Data(), text: "", uuid: uuid, mood: .calm, optInt: nil, optReal: nil, optFlag: nil, optWhen: nil,
            optBytes: nil, optText: nil, optMood: nil),
        Keyed(
            id: "é", int: -1, small: Int32.max, real: .infinity, flag: true,
            when: Date(timeIntervalSinceReferenceDate: 1e12), bytes: Data(repeating: 9, count: 200),
            text: String(repeating: "long текст 🙂 ", count: 400), uuid: uuid, mood: .loud, optInt: 63,
            optReal: nil, optFlag: true, optWhen: nil, optBytes: Data(repeating: 1, count: 130), optText: nil,
            optMood: nil),
    ]

    /// The stored value of each sample, persisted as `R`.
    private func storedValues<R: Record>(_ records: [R], ids: [String]) throws -> [[UInt8]] {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let storage = try env.storage(for: R.self)
            try storage.persist(records)
            return try ids.map { id in
                try env.read(.read) { txn in try txn.copy(storage.table.main, KeyCodec.encode(primaryKey: id)) ?? [] }
            }
        }
    }

    @Test("a record written by position stores the bytes Codable stores, optionals present and absent")
    func sameBytes() throws {
        let ids = samples.map(\.id)
        let packed = try storedValues(samples.map(Packed.init(keyed:)), ids: ids)
        let keyed = try storedValues(samples, ids: ids)
        #expect(packed.count == samples.count && keyed.count == samples.count)
        for (index, (byPosition, byCodable)) in zip(packed, keyed).enumerated() {
            // Compared first, then reported by where they part: the values
            // run to thousands of bytes.
            let same = byPosition == byCodable
            let parting = zip(byPosition, byCodable).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(byPosition.count, byCodable.count)
            #expect(same, "sample \(index): \(byPosition.count) and \(byCodable.count) bytes, first difference at \(parting)")
        }
        #expect(packed.allSatisfy { $0.first == ValueSchema.formatVersion && $0.count > 30 })
    }

    @Test("values written one way read back the other way, field for field")
    func crossRead() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: Keyed.self).persist(samples)
            let packed = try env.storage(for: Packed.self)
            #expect(try packed.readAll().sorted { $0.id < $1.id } == samples.map(Packed.init(keyed:)).sorted { $0.id < $1.id })
            for sample in samples {
                #expect(try packed.read(primaryKey: sample.id) == Packed(keyed: sample))
            }
        }
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: Packed.self).persist(samples.map(Packed.init(keyed:)))
            let keyed = try env.storage(for: Keyed.self)
            #expect(try keyed.readAll().sorted { $0.id < $1.id } == samples.sorted { $0.id < $1.id })
        }
    }

    @Test("a value changed in any byte, or cut short anywhere, is corrupt, never a record")
    func damage() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let storage = try env.storage(for: Packed.self)
            let records = samples.map(Packed.init(keyed:))
            try storage.persist(records)
            for record in records where record.text.count < 100 {
                let key = KeyCodec.encode(primaryKey: record.id)
                let stored: [UInt8] = try env.read(.read) { txn in try txn.copy(storage.table.main, key) ?? [] }
                // Format 2: each byte flipped in turn (the checksum).
                var damaged: [[UInt8]] = stored.indices.map { index in
                    var changed = stored
                    changed[index] ^= 0x10
                    return changed
                }
                // Format 1 (no checksum): the fields cut at every length.
                let fields = Array(stored.dropFirst().dropLast(ValueSchema.checksumSize))
                damaged += (0..<fields.count).map { [ValueSchema.uncheckedFormatVersion] + fields.prefix($0) }
                for value in damaged {
                    try env.write(.persist) { txn in try txn.put(storage.table.main, key, value) }
                    let error = storageError { _ = try storage.read(primaryKey: record.id) }
                    #expect(error?.kind == .corrupt, "\(record.id): \(value.count) bytes")
                }
                let intact = [ValueSchema.uncheckedFormatVersion] + fields
                try env.write(.persist) { txn in try txn.put(storage.table.main, key, intact) }
                #expect(try storage.read(primaryKey: record.id) == record)
                try env.write(.persist) { txn in try txn.put(storage.table.main, key, stored) }
            }
        }
    }
}

import DAOCore
import Foundation
import Testing

/// A record of four fields, one optional, written and read by position.
private struct PackedGauge: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = Int64

    var id: Int64
    var label: String?
    var level: Double
    var on: Bool

    static let entity = Entity<PackedGauge>(
        "gauges", primaryKey: "id", \.id,
        fields: [Field("label", \.label), Field("level", \.level), Field("on", \.on)])

    init(id: Int64, label: String?, level: Double, on: Bool) {
        (self.id, self.label, self.level, self.on) = (id, label, level, on)
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            id: try fields.decode(), label: try fields.decodeIfPresent(), level: try fields.decode(),
            on: try fields.decode())
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encodeIfPresent(label)
        try fields.encode(level)
        try fields.encode(on)
    }
}

/// Memory that grows by doubling, starting at `capacity` bytes.
private final class GrowingAccess: PackedValueAccess, @unchecked Sendable {
    // @unchecked: used by one test at a time.
    var memory: UnsafeMutableRawPointer
    var capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        memory = .allocate(byteCount: capacity, alignment: 8)
    }

    deinit { memory.deallocate() }

    override func grow(toHold needed: Int, keeping kept: Int) -> (UnsafeMutableRawPointer, Int)? {
        var larger = capacity * 2
        while larger < needed { larger *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 8)
        grown.copyMemory(from: memory, byteCount: kept)
        memory.deallocate()
        (memory, capacity) = (grown, larger)
        return (grown, larger)
    }
}

/// The field tables of ``PackedGauge``: types, optionality, offsets.
private final class Tables {
    let types = UnsafeMutablePointer<FieldType>.allocate(capacity: 4)
    let optional = UnsafeMutablePointer<Bool>.allocate(capacity: 4)
    let offsets = UnsafeMutablePointer<Int>.allocate(capacity: 4)

    init() {
        types.initialize(from: [.integer, .text, .real, .bool], count: 4)
        optional.initialize(from: [false, true, false, false], count: 4)
        offsets.initialize(repeating: -2, count: 4)
    }

    deinit {
        types.deallocate()
        optional.deallocate()
        offsets.deallocate()
    }
}

@Suite("Packed values")
struct PackedValuesTests {
    /// `gauge` written from byte 0 through `access`: the bytes, and the
    /// writer's count of fields.
    private func pack(_ gauge: PackedGauge, _ access: GrowingAccess, _ tables: Tables) throws -> ([UInt8], Int) {
        var writer = PackedFieldWriter(
            access: access, base: access.memory, capacity: access.capacity, start: 0, types: tables.types,
            optional: tables.optional, offsets: tables.offsets, fieldCount: 4)
        try gauge.writePacked(to: &writer)
        let bytes = [UInt8](UnsafeRawBufferPointer(start: access.memory, count: writer.byteCount))
        return (bytes, writer.fieldIndex)
    }

    /// `bytes` read back as a ``PackedGauge``, with where the reader stopped.
    private func unpack(_ bytes: [UInt8], _ access: PackedValueAccess, _ tables: Tables) throws -> (PackedGauge, Int, Int) {
        try bytes.withUnsafeBytes { raw in
            guard let start = raw.baseAddress else { throw StorageError(.corrupt, .read, message: "no bytes") }
            var reader = PackedFieldReader(
                access: access, start: start, count: raw.count, first: 0, types: tables.types,
                optional: tables.optional, offsets: tables.offsets, fieldCount: 4)
            let gauge = try PackedGauge.readPacked(from: &reader)
            return (gauge, reader.fieldIndex, reader.byteOffset)
        }
    }

    @Test("the layout: zigzag varint, presence byte and length-prefixed UTF-8, 8-byte real, one-byte boolean")
    func layout() throws {
        let tables = Tables()
        let (bytes, fields) = try pack(PackedGauge(id: -1, label: "é", level: 1.0, on: true), GrowingAccess(capacity: 64), tables)
        #expect(fields == 4)
        #expect(bytes == [0x01, 1, 2, 0xC3, 0xA9, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 1])
        #expect((0..<4).map { tables.offsets[$0] } == [0, 2, 5, 13])
        let (absent, _) = try pack(PackedGauge(id: 300, label: nil, level: 0, on: false), GrowingAccess(capacity: 64), tables)
        #expect(absent == [0xD8, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(tables.offsets[1] == -1)
    }

    @Test("records round-trip, the memory grown as needed from 1 byte")
    func roundTrip() throws {
        let gauges = [
            PackedGauge(id: .min, label: String(repeating: "🚀 naïve \u{0}", count: 200), level: -1e300, on: true),
            PackedGauge(id: .max, label: nil, level: .infinity, on: false),
            PackedGauge(id: 0, label: "", level: .leastNonzeroMagnitude, on: true),
        ]
        for gauge in gauges {
            let tables = Tables()
            let access = GrowingAccess(capacity: 1)
            let (bytes, _) = try pack(gauge, access, tables)
            let (back, fields, end) = try unpack(bytes, access, tables)
            #expect(back == gauge)
            #expect(fields == 4 && end == bytes.count)
        }
    }

    @Test("memory that cannot grow: the writer throws; a NaN and -0.0 are written bit for bit")
    func writeRefusals() throws {
        let tables = Tables()
        let cannotGrow = PackedValueAccess()
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 4, alignment: 8)
        defer { memory.deallocate() }
        var writer = PackedFieldWriter(
            access: cannotGrow, base: memory, capacity: 4, start: 0, types: tables.types, optional: tables.optional,
            offsets: tables.offsets, fieldCount: 4)
        #expect(throws: StorageError.self) { try PackedGauge(id: 1, label: "too long", level: 0, on: true).writePacked(to: &writer) }
        for real in [Double.nan, -0.0, -Double.nan, Double(bitPattern: 0x7FF0_0000_0000_0001)] {
            let access = GrowingAccess(capacity: 8)
            let (bytes, _) = try pack(PackedGauge(id: 1, label: nil, level: real, on: true), access, tables)
            #expect(try unpack(bytes, access, tables).0.level.bitPattern == real.bitPattern)
        }
    }

    @Test("a value cut short, or with a presence byte other than 0 or 1: the reader throws")
    func damage() throws {
        let tables = Tables()
        let access = GrowingAccess(capacity: 64)
        let (bytes, _) = try pack(PackedGauge(id: 70, label: "abc", level: 2, on: true), access, tables)
        for cut in 1..<bytes.count {
            #expect(throws: StorageError.self) { _ = try unpack(Array(bytes.prefix(cut)), access, tables) }
        }
        var presence = bytes
        presence[2] = 2  // after the two-byte varint of 70
        #expect(throws: StorageError.self) { _ = try unpack(presence, access, tables) }
    }
}

import DAOCore
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// A parent with a text key whose children are filtered by index: each
/// index of ``Reading`` leads with the foreign key, so a query on it reads
/// the station's range filtered on the index's other fields (``RangeFilter``).
private struct Station: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = String
    var code: String
    var readings: [Reading]

    static let entity = Entity<Station>(
        "stations", primaryKey: "code", \.code, fields: [],
        relations: [Relation("readings", \.readings, foreignKey: "stationCode", \Reading.stationCode)])

    init(code: String, readings: [Reading]) {
        self.code = code
        self.readings = readings
    }

    init(fields: inout some FieldReader) throws {
        self.init(code: try fields.decode(), readings: [])
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(code)
    }
}

/// A child with a field of every stored shape: optionals, text, bytes, and
/// a tail of fixed-width fields (a real, a date, two booleans) that the
/// filter finds from the value's end.
private struct Reading: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var stationCode: String
    var note: String
    var label: String?
    var level: Int64
    var blob: Data
    var ratio: Double
    var when: Date
    var active: Bool
    var flagged: Bool

    static let entity = Entity<Reading>(
        "readings", primaryKey: "id", \.id,
        fields: [
            Field("stationCode", \.stationCode), Field("note", \.note), Field("label", \.label),
            Field("level", \.level), Field("blob", \.blob), Field("ratio", \.ratio), Field("when", \.when),
            Field("active", \.active), Field("flagged", \.flagged),
        ],
        indexes: [
            Index("by_active_flagged", on: ["stationCode", "active", "flagged"]),
            Index("by_ratio", on: ["stationCode", "ratio"]),
            Index("by_when", on: ["stationCode", "when"]),
            Index("by_level", on: ["stationCode", "level"]),
            Index("by_note", on: ["stationCode", "note"]),
            Index("by_label", on: ["stationCode", "label"]),
            Index("by_blob", on: ["stationCode", "blob"]),
        ],
        ownedBy: Station.self)

    init(fields: inout some FieldReader) throws {
        id = try fields.decode()
        stationCode = try fields.decode()
        note = try fields.decode()
        label = try fields.decodeIfPresent()
        level = try fields.decode()
        blob = try fields.decode()
        ratio = try fields.decode()
        when = try fields.decode()
        active = try fields.decode()
        flagged = try fields.decode()
    }

    init(
        id: Int64, stationCode: String, note: String, label: String?, level: Int64, blob: Data, ratio: Double,
        when: Date, active: Bool, flagged: Bool
    ) {
        self.id = id
        self.stationCode = stationCode
        self.note = note
        self.label = label
        self.level = level
        self.blob = blob
        self.ratio = ratio
        self.when = when
        self.active = active
        self.flagged = flagged
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(stationCode)
        try fields.encode(note)
        try fields.encode(label)
        try fields.encode(level)
        try fields.encode(blob)
        try fields.encode(ratio)
        try fields.encode(when)
        try fields.encode(active)
        try fields.encode(flagged)
    }
}

/// The stations of these tests: values that collide on every field, text in
/// NFC and NFD, with NUL, emoji and U+FFFD, empty and long text and bytes.
private let stations: [Station] = {
    let notes = ["", "café", "cafe\u{301}", "a\u{0}b", "🚀 привет", "\u{FFFD}", String(repeating: "long ", count: 300)]
    let labels: [String?] = [nil, "x", "", "e\u{301}", nil]
    let ratios = [0.0, 1.5, -2.25, 1e300, 0.1]
    let blobs = [Data(), Data([0]), Data([1, 2, 3]), Data([0xFF, 0xFE])]
    var id: Int64 = 0
    return ["α", "b\u{0}", "c"].map { code in
        let readings = (0..<40).map { position in
            id += 1
            return Reading(
                id: id, stationCode: code, note: notes[position % notes.count],
                label: labels[position % labels.count], level: Int64(position % 6) - 2,
                blob: blobs[position % blobs.count], ratio: ratios[position % ratios.count],
                when: Date(timeIntervalSinceReferenceDate: Double(position % 3) * 1000.5),
                active: position % 2 == 0, flagged: position % 3 == 0)
        }
        return Station(code: code, readings: readings)
    }
}()

@Suite struct RangeFilterTests {
    /// Values bound to the filter: of every kind, each field's own among them.
    private static let bound: [StoredValue] = [
        .null, .integer(0), .integer(1), .integer(-2), .integer(3), .integer(-1), .real(0), .real(-0.0),
        .real(1.5), .real(-2.25), .real(1e300), .real(1000.5), .real(.nan), .text(""), .text("café"),
        .text("cafe\u{301}"), .text("a\u{0}b"), .text("🚀 привет"), .text("\u{FFFD}"), .text("x"),
        .text("e\u{301}"), .text(String(repeating: "long ", count: 300)), .blob([]), .blob([0]),
        .blob([1, 2, 3]), .blob([0xFF, 0xFE]),
    ]

    /// For every stored value, every field and every bound value (and pairs
    /// of fields), the filter answers what comparing the decoded value with
    /// the bound one as index keys answers (`KeyCodec.sameKey`), whether it
    /// finds the fields from the value's end or lays them out from its start.
    @Test("the filter keeps exactly the values whose fields have the bound values' index keys")
    func sameAnswersAsIndexKeys() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: Station.self).persist(stations)
            let table = try env.storage(for: Reading.self).table
            let schema = table.schema
            var values: [[UInt8]] = try env.read(.read) { txn in
                var values: [[UInt8]] = []
                try txn.scan(table.main, prefix: []) { _, value in
                    values.append([UInt8](value))
                    return true
                }
                return values
            }
            #expect(values.count == 120)
            // Text that is not valid UTF-8 (which this adapter never writes)
            // compares as the String it reads as: U+FFFD for each ill-formed
            // sequence. The note "café" with its "é" bytes made 0xFF 0xFF
            // reads as "caf\u{FFFD}\u{FFFD}".
            if let first = values.first(where: { Array("café".utf8).isSubsequence(of: $0) }),
                let start = first.firstRange(of: Array("café".utf8))?.lowerBound
            {
                var damaged = first
                damaged[start + 3] = 0xFF
                damaged[start + 4] = 0xFF
                values.append(damaged)
            } else {
                Issue.record("no stored note 'café'")
            }
            let decoder = ValueDecoder(schema: schema)
            let bound = Self.bound + [.text("caf\u{FFFD}\u{FFFD}")]
            var kept = 0
            var compared = 0
            var rejected = 0
            var passed = 0
            for value in values {
                try value.withUnsafeBytes { value in
                    for field in 1..<schema.fieldCount {
                        for candidate in bound {
                            let filter = RangeFilter(
                                fields: [field], values: [candidate], types: schema.types, optional: schema.optional)
                            try decoder.begin(value, checkingSum: false)
                            try filter.locate(in: decoder)
                            let answer = try filter.matches(decoder)
                            try decoder.load(value, checkingSum: false)
                            let expected = KeyCodec.sameKey(try decoder.value(at: field), candidate)
                            #expect(answer == expected, "field \(schema.names[field]) bound \(candidate)")
                            // The verdict on the raw bytes is the decoder's
                            // answer, and is given whenever the compared
                            // field has a fixed distance from the end.
                            switch filter.verdict(value) {
                            case .fails:
                                #expect(!expected, "fails: field \(schema.names[field]) bound \(candidate)")
                                rejected += 1
                            case .passes:
                                #expect(expected, "passes: field \(schema.names[field]) bound \(candidate)")
                                passed += 1
                            case .undecided:
                                #expect(filter.fixedSuffix == 0, "undecided: field \(schema.names[field]) bound \(candidate)")
                            }
                            compared += 1
                            if answer { kept += 1 }
                        }
                    }
                    // Two fields: the booleans at the end, then a text and a real.
                    for pair in [(9, 8), (2, 6), (3, 7)] {
                        try decoder.load(value, checkingSum: false)
                        let first = try decoder.value(at: pair.0)
                        let second = try decoder.value(at: pair.1)
                        for other in [StoredValue.integer(0), .integer(1), .text("x"), .real(0), .real(1000.5)] {
                            let filter = RangeFilter(
                                fields: [pair.0, pair.1], values: [first, other], types: schema.types,
                                optional: schema.optional)
                            try decoder.begin(value, checkingSum: false)
                            try filter.locate(in: decoder)
                            let answer = try filter.matches(decoder)
                            #expect(answer == KeyCodec.sameKey(second, other))
                            switch filter.verdict(value) {
                            case .fails: #expect(!answer)
                            case .passes: #expect(answer)
                            case .undecided: break
                            }
                        }
                    }
                }
            }
            // Both answers occur, so the comparison is not vacuous.
            #expect(kept > 0 && kept < compared)
            // Values of the current format with the booleans, the real and
            // the date at their fixed places are decided on their bytes,
            // both ways.
            #expect(rejected > 0 && passed > 0)
        }
    }

    /// Queries on each index, through the storage, give what filtering the
    /// records in memory gives, sorted by primary key.
    @Test("queries on indexes that lead with the foreign key answer exactly")
    func queries() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: Station.self).persist(stations)
            let readings = try env.storage(for: Reading.self)
            let all = stations.flatMap(\.readings)
            for code in ["α", "b\u{0}", "c", "d"] {
                func check(_ predicate: Predicate<Reading>, _ expected: (Reading) -> Bool, _ what: String) throws {
                    guard case .parentIndexRange = readings.table.plan(for: predicate) else {
                        Issue.record("\(what) is not read as a filtered parent range")
                        return
                    }
                    let answer = try readings.read(where: predicate)
                    let wanted = all.filter { $0.stationCode == code && expected($0) }
                    #expect(answer == wanted, "\(what) of \(code)")
                }
                for active in [false, true] {
                    for flagged in [false, true] {
                        try check(
                            #Predicate { $0.stationCode == code && $0.active == active && $0.flagged == flagged },
                            { $0.active == active && $0.flagged == flagged }, "active \(active) flagged \(flagged)")
                    }
                }
                for ratio in [0.0, -0.0, 1.5, 1e300, 7] {
                    try check(#Predicate { $0.stationCode == code && $0.ratio == ratio }, { $0.ratio == ratio }, "ratio \(ratio)")
                }
                for seconds in [0.0, 1000.5, 3] {
                    let when = Date(timeIntervalSinceReferenceDate: seconds)
                    try check(#Predicate { $0.stationCode == code && $0.when == when }, { $0.when == when }, "when \(seconds)")
                }
                for level: Int64 in [-2, 0, 3, 9] {
                    try check(#Predicate { $0.stationCode == code && $0.level == level }, { $0.level == level }, "level \(level)")
                }
                // Text compares by its UTF-8 bytes, as index keys do: NFC and NFD apart.
                for note in ["café", "cafe\u{301}", "a\u{0}b", "", "\u{FFFD}", "none"] {
                    try check(
                        #Predicate { $0.stationCode == code && $0.note == note },
                        { Array($0.note.utf8) == Array(note.utf8) }, "note \(note)")
                }
                for label: String? in [nil, "x", "", "e\u{301}", "é"] {
                    try check(
                        #Predicate { $0.stationCode == code && $0.label == label },
                        { $0.label.map { Array($0.utf8) } == label.map { Array($0.utf8) } }, "label \(String(describing: label))")
                }
                for blob in [Data(), Data([0]), Data([0xFF, 0xFE]), Data([9])] {
                    try check(#Predicate { $0.stationCode == code && $0.blob == blob }, { $0.blob == blob }, "blob \(blob)")
                }
            }
        }
    }

    /// The filter reads only the fields it compares: a child it keeps is
    /// checked whole (its checksum, its layout) when it is read, so damage
    /// after those fields is found then.
    @Test("a kept child damaged after the compared fields is corrupt")
    func keptDamage() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: Station.self).persist(stations)
            let readings = try env.storage(for: Reading.self)
            let target = stations[2].readings[4]  // active, not flagged
            let key = KeyCodec.encode(primaryKey: target.stationCode) + KeyCodec.encode(primaryKey: target.id)
            let stored: [UInt8] = try env.read(.read) { txn in try txn.copy(readings.table.main, key) ?? [] }
            #expect(stored.first == ValueSchema.formatVersion)
            let code = target.stationCode
            let predicate = #Predicate<Reading> { $0.stationCode == code && $0.active == true && $0.flagged == false }
            #expect(try readings.read(where: predicate).contains(target))
            // One byte changed before the compared fields, checksum kept: corrupt.
            var changed = stored
            changed[changed.count - 14] ^= 0x01
            try env.write(.persist) { txn in try txn.put(readings.table.main, key, changed) }
            #expect(storageError { _ = try readings.read(where: predicate) }?.kind == .corrupt)
            // Format 1 (no checksum), one extra byte before the booleans: the
            // booleans counted from the end still match, the layout does not.
            let fields = Array(stored.dropFirst().dropLast(ValueSchema.checksumSize))
            let extra = [ValueSchema.uncheckedFormatVersion] + fields.dropLast(2) + [0] + fields.suffix(2)
            try env.write(.persist) { txn in try txn.put(readings.table.main, key, extra) }
            #expect(storageError { _ = try readings.read(where: predicate) }?.kind == .corrupt)
            try env.write(.persist) { txn in try txn.put(readings.table.main, key, stored) }
            #expect(try readings.read(where: predicate).contains(target))
        }
    }

    /// The check on a child's raw bytes (``RangeFilter/verdict(_:)``) decides
    /// only values of the current format long enough to hold the compared
    /// fields: a child the filter would skip by its booleans, but of an
    /// unknown format or cut short, is still `corrupt`, as when the decoder
    /// saw every child.
    @Test("a skipped child of an unknown format or cut short is corrupt")
    func skippedDamage() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: Station.self).persist(stations)
            let readings = try env.storage(for: Reading.self)
            let station = stations[2]
            let code = station.code
            let predicate = #Predicate<Reading> { $0.stationCode == code && $0.active == true && $0.flagged == false }
            let expected = station.readings.filter { $0.active && !$0.flagged }
            #expect(try readings.read(where: predicate) == expected)
            guard let skipped = station.readings.first(where: { !($0.active && !$0.flagged) }) else {
                Issue.record("every reading of the station matches")
                return
            }
            let key = KeyCodec.encode(primaryKey: skipped.stationCode) + KeyCodec.encode(primaryKey: skipped.id)
            let stored: [UInt8] = try env.read(.read) { txn in try txn.copy(readings.table.main, key) ?? [] }
            #expect(stored.first == ValueSchema.formatVersion)
            let filter = RangeFilter(
                fields: [8, 9], values: [.integer(1), .integer(0)], types: readings.table.schema.types,
                optional: readings.table.schema.optional)
            #expect(stored.withUnsafeBytes { filter.verdict($0) } == .fails)
            for damaged in [[UInt8]([9]) + stored.dropFirst(), Array(stored.prefix(1 + ValueSchema.checksumSize))] {
                #expect(damaged.withUnsafeBytes { filter.verdict($0) } == .undecided)
                try env.write(.persist) { txn in try txn.put(readings.table.main, key, damaged) }
                #expect(storageError { _ = try readings.read(where: predicate) }?.kind == .corrupt)
            }
            try env.write(.persist) { txn in try txn.put(readings.table.main, key, stored) }
            #expect(try readings.read(where: predicate) == expected)
        }
    }
}

extension Array where Element: Equatable {
    /// Whether `other`'s elements appear in this array in one run.
    fileprivate func isSubsequence(of other: [Element]) -> Bool {
        other.firstRange(of: self) != nil
    }
}

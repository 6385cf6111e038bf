import DAOCore
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// A record read by position, with a text field and an optional one.
private struct Note: Record, FieldwiseRecord, Hashable {
    typealias PrimaryKey = Int64

    var id: Int64
    var title: String
    var body: String?

    static let entity = Entity<Note>(
        "notes", primaryKey: "id", \.id, fields: [Field("title", \.title), Field("body", \.body)])

    init(id: Int64, title: String, body: String?) {
        self.id = id
        self.title = title
        self.body = body
    }

    init(fields: inout some FieldReader) throws {
        self.init(id: try fields.decode(), title: try fields.decode(), body: try fields.decodeIfPresent())
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(title)
        try fields.encode(body)
    }
}

/// A record read through `Decodable` (laid out first, then read by key).
private struct Memo: Record, Hashable {
    typealias PrimaryKey = String

    var id: String
    var title: String

    static let entity = Entity<Memo>("memos", primaryKey: "id", \.id, fields: [Field("title", \.title)])
}

/// The text of a value whose checksum matched is made a `String` without
/// being validated again: the CRC-32C covers bytes the store wrote from Swift
/// strings. So a changed byte inside stored text must fail the checksum
/// (`corrupt`), never reach a `String`; a value without a checksum (format 1,
/// which older builds and other programs write) still has its text validated,
/// ill-formed sequences repaired exactly as the standard library repairs them.
@Suite struct TextChecksumTests {
    /// 24 ASCII bytes: ill-formed sequences put at offsets 0 to 15 cross the
    /// validator's 8-byte words at every place.
    private static let plain = String(repeating: "a", count: 24)

    /// Ill-formed sequences: overlong forms, surrogates, code points above
    /// U+10FFFF, bytes that never occur, lone continuations, and sequences
    /// cut short.
    private static let illFormed: [[UInt8]] = [
        [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0xAF],
        [0xF0, 0x8F, 0xBF, 0xBF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80],
        [0xF5, 0x80, 0x80, 0x80], [0xFE], [0xFF], [0x80], [0xBF], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x9A],
        [0xE2, 0x82, 0x41], [0xF0, 0x9F, 0x9A, 0x41],
    ]

    /// Where `needle` starts in `bytes`.
    private func offset(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard needle.count <= bytes.count else { return nil }
        return (0...(bytes.count - needle.count)).first { Array(bytes[$0..<$0 + needle.count]) == needle }
    }

    /// `stored` with `bytes` written over it from `at`.
    private func replacing(_ stored: [UInt8], at: Int, with bytes: [UInt8]) -> [UInt8] {
        var changed = stored
        changed.replaceSubrange(at..<at + bytes.count, with: bytes)
        return changed
    }

    /// `fields` (a format-2 value without its version byte and checksum) as
    /// a value of format 2 with its checksum computed again.
    private func resummed(_ fields: [UInt8]) -> [UInt8] {
        let value = [ValueSchema.formatVersion] + fields
        let sum = CRC32C.checksum(value)
        return value + withUnsafeBytes(of: sum.littleEndian) { Array($0) }
    }

    @Test("a changed byte inside stored text fails the checksum: corrupt, on every read path")
    func damagedTextIsCorrupt() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let notes = try env.storage(for: Note.self)
            let memos = try env.storage(for: Memo.self)
            let note = Note(id: 1, title: Self.plain, body: "naïve привет 🚀")
            let memo = Memo(id: "m", title: Self.plain)
            try notes.persist([note, Note(id: 2, title: "other", body: nil)])
            try memos.persist(memo)
            let noteKey = KeyCodec.encode(primaryKey: note.id)
            let memoKey = KeyCodec.encode(primaryKey: memo.id)
            let storedNote: [UInt8] = try env.read(.read) { txn in try txn.copy(notes.table.main, noteKey) ?? [] }
            let storedMemo: [UInt8] = try env.read(.read) { txn in try txn.copy(memos.table.main, memoKey) ?? [] }
            #expect(storedNote.first == ValueSchema.formatVersion)
            let noteText = try #require(offset(of: Array(Self.plain.utf8), in: storedNote))
            let memoText = try #require(offset(of: Array(Self.plain.utf8), in: storedMemo))
            let bodyText = try #require(offset(of: Array("привет".utf8), in: storedNote))
            var checked = 0
            for at in 0..<16 {
                for sequence in Self.illFormed + [[0x62], [0x61 ^ 0x20]] {
                    try env.write(.persist) { txn in
                        try txn.put(notes.table.main, noteKey, replacing(storedNote, at: noteText + at, with: sequence))
                        try txn.put(memos.table.main, memoKey, replacing(storedMemo, at: memoText + at, with: sequence))
                    }
                    for error in [
                        storageError { _ = try notes.read(primaryKey: 1) },
                        storageError { _ = try notes.readAll() },
                        storageError { _ = try notes.read(where: #Predicate { $0.title != "x" }) },
                        storageError { _ = try notes.read(primaryKeys: [2, 1]) },
                        storageError { _ = try memos.read(primaryKey: "m") },
                        storageError { _ = try memos.readAll() },
                    ] {
                        #expect(error?.kind == .corrupt, "\(sequence) at \(at)")
                        #expect(error?.message.contains("CRC-32C") == true, "\(sequence) at \(at)")
                        checked += 1
                    }
                }
            }
            // A byte of the optional text's Cyrillic changed into another
            // well-formed byte sequence, and into an ill-formed one.
            for sequence in [[0xD0, 0xB0], [0xC0], [0xD1, 0x41]] as [[UInt8]] {
                try env.write(.persist) { txn in
                    try txn.put(notes.table.main, noteKey, replacing(storedNote, at: bodyText, with: sequence))
                }
                #expect(storageError { _ = try notes.read(primaryKey: 1) }?.kind == .corrupt)
            }
            try env.write(.persist) { txn in
                try txn.put(notes.table.main, noteKey, storedNote)
                try txn.put(memos.table.main, memoKey, storedMemo)
            }
            #expect(try notes.read(primaryKey: 1) == note)
            #expect(try memos.read(primaryKey: "m") == memo)
            #expect(checked == 16 * (Self.illFormed.count + 2) * 6)
        }
    }

    @Test("text without a checksum is validated: ill-formed sequences read as the standard library repairs them")
    func textOfFormatOneIsValidated() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let notes = try env.storage(for: Note.self)
            let memos = try env.storage(for: Memo.self)
            try notes.persist(Note(id: 1, title: Self.plain, body: nil))
            try memos.persist(Memo(id: "m", title: Self.plain))
            let noteKey = KeyCodec.encode(primaryKey: Int64(1))
            let memoKey = KeyCodec.encode(primaryKey: "m")
            let storedNote: [UInt8] = try env.read(.read) { txn in try txn.copy(notes.table.main, noteKey) ?? [] }
            let storedMemo: [UInt8] = try env.read(.read) { txn in try txn.copy(memos.table.main, memoKey) ?? [] }
            // Format 1: the same fields behind version byte 1, no checksum.
            let noteFields = Array(storedNote.dropFirst().dropLast(ValueSchema.checksumSize))
            let memoFields = Array(storedMemo.dropFirst().dropLast(ValueSchema.checksumSize))
            let noteText = try #require(offset(of: Array(Self.plain.utf8), in: noteFields))
            let memoText = try #require(offset(of: Array(Self.plain.utf8), in: memoFields))
            let wellFormed: [[UInt8]] = [Array("é".utf8), Array("€".utf8), Array("🚀".utf8), Array("\u{10FFFF}".utf8)]
            var repaired = 0
            for at in 0..<16 {
                for sequence in Self.illFormed + wellFormed {
                    var bytes = Array(Self.plain.utf8)
                    bytes.replaceSubrange(at..<at + sequence.count, with: sequence)
                    // The oracle: the standard library's validation and repair.
                    let expected = String(decoding: bytes, as: UTF8.self)
                    let isValid = String(validating: bytes, as: UTF8.self) != nil
                    #expect(isValid == wellFormed.contains(sequence), "\(sequence)")
                    try env.write(.persist) { txn in
                        try txn.put(
                            notes.table.main, noteKey,
                            [ValueSchema.uncheckedFormatVersion] + replacing(noteFields, at: noteText + at, with: sequence))
                        try txn.put(
                            memos.table.main, memoKey,
                            [ValueSchema.uncheckedFormatVersion] + replacing(memoFields, at: memoText + at, with: sequence))
                    }
                    let note = try #require(try notes.read(primaryKey: 1))
                    let memo = try #require(try memos.read(primaryKey: "m"))
                    #expect(Array(note.title.utf8) == Array(expected.utf8), "\(sequence) at \(at)")
                    #expect(Array(memo.title.utf8) == Array(expected.utf8), "\(sequence) at \(at)")
                    #expect(Array(try notes.readAll()[0].title.utf8) == Array(expected.utf8), "\(sequence) at \(at)")
                    if !isValid {
                        #expect(note.title.unicodeScalars.contains("\u{FFFD}"))
                        repaired += 1
                    }
                }
            }
            #expect(repaired == 16 * Self.illFormed.count)
        }
    }

    @Test("a value whose checksum matches is read as it is: text written with the checksum computed again")
    func resummedTextIsRead() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let notes = try env.storage(for: Note.self)
            try notes.persist(Note(id: 1, title: Self.plain, body: "x"))
            let key = KeyCodec.encode(primaryKey: Int64(1))
            let stored: [UInt8] = try env.read(.read) { txn in try txn.copy(notes.table.main, key) ?? [] }
            let fields = Array(stored.dropFirst().dropLast(ValueSchema.checksumSize))
            let text = try #require(offset(of: Array(Self.plain.utf8), in: fields))
            for replacement in ["é", "🚀", "ж", "\u{0}", "€"] {
                let bytes = Array(replacement.utf8)
                try env.write(.persist) { txn in
                    try txn.put(notes.table.main, key, resummed(replacing(fields, at: text + 3, with: bytes)))
                }
                var title = Array(Self.plain.utf8)
                title.replaceSubrange(3..<3 + bytes.count, with: bytes)
                #expect(try notes.read(primaryKey: 1)?.title == String(decoding: title, as: UTF8.self))
            }
        }
    }
}

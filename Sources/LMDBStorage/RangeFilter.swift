import DAOCore
import Foundation

/// The filter of a query on an index that leads with the foreign key
/// (``EntityTable/Plan/parentIndexRange(_:parent:rest:)``): which children of
/// the parent's range have the same index key as the values the predicate
/// binds after the foreign key. It answers what ``KeyCodec/sameKey(_:_:)``
/// answers for each field's ``ValueDecoder/value(at:)`` and the bound value,
/// but from the stored bytes: no ``StoredValue`` (nor `String`) is made per
/// child, and only the fields up to the last one compared are laid out.
///
/// Made once per query. Its comparisons are plain values in memory of its
/// own, so checking a child touches no reference count.
final class RangeFilter {
    /// One field compared with its bound value.
    struct Check {
        enum Kind {
            /// The bound value is null: the field must be absent.
            case null
            /// The bound value is of another kind than the field's stored
            /// values (or the field's type is unknown): no child matches.
            case never
            /// An integer field, equal to `bits` as an `Int64`.
            case integer
            /// A boolean field, stored as a byte and compared as 0 or 1
            /// with `bits` as an `Int64`.
            case bool
            /// A real or date field whose bits, with `-0.0` as `0.0`, are `bits`.
            case real
            /// A text field holding the bound text's UTF-8 bytes.
            case text
            /// A blob field holding the bound bytes.
            case blob
        }

        var kind: Kind
        /// The field's position among the entity's fields.
        var field: Int
        var bits: UInt64
        /// The bound text's or blob's bytes (the filter's memory).
        var bytes: UnsafeRawBufferPointer
        /// For text: whether the bound text holds U+FFFD, so stored bytes
        /// that are not valid UTF-8 (which `String` repairs with U+FFFD)
        /// may still compare equal once repaired.
        var mayMatchRepaired: Bool
        /// The bound value's position in ``RangeFilter/bound``.
        var value: Int
        /// How many bytes before the value's end (its checksum excluded)
        /// the field starts when it and every field after it have a fixed
        /// width (non-optional booleans, reals and dates); 0 otherwise.
        var fromEnd: Int
    }

    private let checks: UnsafeMutableBufferPointer<Check>
    /// The memory of the bound texts and blobs.
    private let owned: [UnsafeMutableRawBufferPointer]
    /// The bound values, for text that needs repairing first.
    private let bound: [StoredValue]
    /// How many leading fields a child is laid out through: one past the
    /// last field compared.
    let fieldsRead: Int
    /// When every field compared has a fixed distance from the value's end
    /// (``Check/fromEnd``), the greatest of them; 0 otherwise.
    let fixedSuffix: Int
    /// When the filter is one boolean compared at a fixed distance from the
    /// value's end (a parent's children filtered on a flag, as the
    /// workload's unread messages are): that distance, else 0, and the
    /// value it must read as (a stored byte other than 0 reads as `true`,
    /// as ``ValueDecoder/bool(at:)`` reads it; a bound value other than 0
    /// or 1 is left to the loop, where nothing matches it).
    /// ``verdict(_:)`` decides it without the loop over the checks.
    private let singleBoolFromEnd: Int
    private let singleBoolIsSet: Bool

    /// The filter comparing field `fields[i]` with `values[i]` (as many as
    /// both have), for an entity whose fields have `types`.
    convenience init(fields: [Int], values: [StoredValue], types: [FieldType], optional: [Bool]) {
        self.init(fields: fields, values: values, types: types, fromEnd: Self.fromEnd(types: types, optional: optional))
    }

    /// Each field's distance from the end of a value (its checksum excluded)
    /// when it and every field after it have a fixed width, else 0
    /// (``Check/fromEnd``), for an entity whose fields have `types`.
    static func fromEnd(types: [FieldType], optional: [Bool]) -> [Int] {
        var fromEnd = [Int](repeating: 0, count: types.count)
        var suffix = 0
        for field in types.indices.reversed() {
            let width: Int
            switch types[field] {
            case .bool: width = 1
            case .real, .date: width = 8
            case .integer, .text, .blob: width = 0
            }
            guard width > 0, field < optional.count, !optional[field] else { break }
            suffix += width
            fromEnd[field] = suffix
        }
        return fromEnd
    }

    /// The filter comparing field `fields[i]` with `values[i]` (as many as
    /// both have), for an entity whose fields have `types` and lie
    /// `fromEnd` bytes from a value's end (``fromEnd(types:optional:)``).
    convenience init(fields: [Int], values: [StoredValue], types: [FieldType], fromEnd: [Int]) {
        self.init(fields: fields, values: values, from: 0, types: types, fromEnd: fromEnd)
    }

    /// The filter comparing field `fields[i]` with `values[first + i]`, as
    /// many as both have: a query's bound values after the ones its key
    /// range took, without copying them out.
    init(fields: [Int], values allValues: [StoredValue], from first: Int, types: [FieldType], fromEnd: [Int]) {
        let count = min(fields.count, max(allValues.count - first, 0))
        bound = allValues
        checks = .allocate(capacity: count)
        var fieldsRead = 0
        var fixedSuffix = 0
        var allFixed = count > 0
        var owned: [UnsafeMutableRawBufferPointer] = []
        for position in 0..<count {
            let field = fields[position]
            fieldsRead = max(fieldsRead, field + 1)
            var check = Check(
                kind: .never, field: field, bits: 0, bytes: UnsafeRawBufferPointer(start: nil, count: 0),
                mayMatchRepaired: false, value: first + position, fromEnd: field < fromEnd.count ? fromEnd[field] : 0)
            if check.fromEnd == 0 { allFixed = false }
            fixedSuffix = max(fixedSuffix, check.fromEnd)
            let type: FieldType? = field < types.count ? types[field] : nil
            switch (allValues[first + position], type) {
            case (.null, _):
                check.kind = .null
            case (.integer(let integer), .integer?):
                check.kind = .integer
                check.bits = UInt64(bitPattern: integer)
            case (.integer(let integer), .bool?):
                check.kind = .bool
                check.bits = UInt64(bitPattern: integer)
            case (.real(let real), .real?), (.real(let real), .date?):
                check.kind = .real
                check.bits = (real == 0 ? 0.0 : real).bitPattern
            case (.text(let text), .text?):
                check.kind = .text
                let utf8 = Array(text.utf8)
                check.bytes = Self.copy(utf8, into: &owned)
                check.mayMatchRepaired = text.unicodeScalars.contains("\u{FFFD}")
            case (.blob(let blob), .blob?):
                check.kind = .blob
                check.bytes = Self.copy(blob, into: &owned)
            default:
                check.kind = .never
            }
            checks.initializeElement(at: position, to: check)
        }
        self.fieldsRead = fieldsRead
        self.fixedSuffix = allFixed ? fixedSuffix : 0
        if allFixed, count == 1, checks[0].kind == .bool, checks[0].fromEnd > 0, checks[0].bits <= 1 {
            singleBoolFromEnd = checks[0].fromEnd
            singleBoolIsSet = checks[0].bits == 1
        } else {
            singleBoolFromEnd = 0
            singleBoolIsSet = false
        }
        self.owned = owned
    }

    deinit {
        checks.deallocate()
        for memory in owned { memory.deallocate() }
    }

    /// A copy of `bytes` in new memory, added to `owned`.
    private static func copy(_ bytes: [UInt8], into owned: inout [UnsafeMutableRawBufferPointer]) -> UnsafeRawBufferPointer {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        owned.append(memory)
        bytes.withUnsafeBytes { source in
            if let start = source.baseAddress { memory.baseAddress?.copyMemory(from: start, byteCount: source.count) }
        }
        return UnsafeRawBufferPointer(rebasing: memory[0..<bytes.count])
    }

    /// Finds the fields compared in the value `decoder` holds
    /// (``ValueDecoder/begin(_:checkingSum:)``): counted from the value's end
    /// when they all have a fixed distance from it (a value whose fields are
    /// as its entity declares them has them exactly there), else laid out
    /// from the start through ``fieldsRead`` fields. Nothing after them is
    /// checked: a child the filter keeps is checked whole when it is read,
    /// one it skips is read no further, as a child outside an index range
    /// is not read.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` for a value that ends before
    ///   or inside one of the fields laid out.
    @inline(__always)
    func locate(in decoder: ValueDecoder) throws {
        let count = decoder.loaded.count
        // The version byte comes first.
        if fixedSuffix > 0, count - fixedSuffix >= 1 {
            let offsets = decoder.offsets
            for position in checks.indices {
                let check = checks[position]
                offsets[check.field] = count - check.fromEnd
            }
            return
        }
        try decoder.layOutPrefix(fields: fieldsRead)
    }

    /// What a stored value's bytes alone say about the filter, decided
    /// before the decoder is given the value.
    enum Verdict {
        /// It fails a check.
        case fails
        /// It passes every check.
        case passes
        /// The bytes alone do not tell: ``locate(in:)`` and ``matches(_:)``
        /// decide.
        case undecided
    }

    /// What the stored value `value` answers, from its bytes alone: decided
    /// only for a value of the current format (checksum last) that is long
    /// enough to hold the compared fields, when they all lie at a fixed
    /// distance from its end (``fixedSuffix``); ``Verdict/undecided``
    /// otherwise. A decided value gets the answer ``ValueDecoder/begin(_:checkingSum:)``,
    /// ``locate(in:)`` and ``matches(_:)`` give (the same bytes compared the
    /// same way, found where ``locate(in:)`` finds them, which cannot throw
    /// for such a value); a value too short or of an unknown format is never
    /// decided, so it reaches the decoder, which throws. Spares a child that
    /// fails the decoder's set-up and the per-check field lookups, and one
    /// that passes the second look.
    @inline(__always)
    func verdict(_ value: UnsafeRawBufferPointer) -> Verdict {
        guard fixedSuffix > 0, let start = value.baseAddress, value.count > ValueSchema.checksumSize,
            start.load(as: UInt8.self) == ValueSchema.formatVersion
        else { return .undecided }
        let end = value.count - ValueSchema.checksumSize
        // The version byte comes first, then at least the fixed fields.
        guard end - fixedSuffix >= 1 else { return .undecided }
        if singleBoolFromEnd > 0 {
            let isSet = start.load(fromByteOffset: end - singleBoolFromEnd, as: UInt8.self) != 0
            return isSet == singleBoolIsSet ? .passes : .fails
        }
        for position in checks.indices {
            let check = checks[position]
            let offset = end - check.fromEnd
            switch check.kind {
            case .bool:
                let stored: UInt64 = start.load(fromByteOffset: offset, as: UInt8.self) != 0 ? 1 : 0
                if stored != check.bits { return .fails }
            case .real:
                let real = Double(
                    bitPattern: UInt64(littleEndian: start.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                if (real == 0 ? 0.0 : real).bitPattern != check.bits { return .fails }
            case .null, .never:
                // A field with a fixed distance from the end is never
                // optional, so it is present and fails a null check.
                return .fails
            case .integer, .text, .blob:
                // Not fixed-width: not met with a fixed suffix.
                return .undecided
            }
        }
        return .passes
    }

    /// Whether the value `decoder` holds, its compared fields found by
    /// ``locate(in:)``, passes every check.
    @inline(__always)
    func matches(_ decoder: ValueDecoder) throws -> Bool {
        for position in checks.indices {
            guard try matches(checks[position], decoder) else { return false }
        }
        return true
    }

    @inline(__always)
    private func matches(_ check: Check, _ decoder: ValueDecoder) throws -> Bool {
        let present = !decoder.isNull(at: check.field)
        switch check.kind {
        case .null:
            return !present
        case .never:
            return false
        case .integer:
            guard present else { return false }
            return UInt64(bitPattern: try decoder.integer(at: check.field)) == check.bits
        case .bool:
            return present && (decoder.bool(at: check.field) ? 1 : 0) == check.bits
        case .real:
            guard present else { return false }
            let real = decoder.real(at: check.field)
            return (real == 0 ? 0.0 : real).bitPattern == check.bits
        case .text, .blob:
            guard present else { return false }
            let stored = try decoder.rawBytes(at: check.field)
            if stored.count == check.bytes.count {
                guard let storedStart = stored.baseAddress, let boundStart = check.bytes.baseAddress else {
                    return true  // both empty
                }
                if memcmp(storedStart, boundStart, stored.count) == 0 { return true }
            }
            // Text that is not valid UTF-8 is compared as the `String` it
            // reads as (each ill-formed sequence U+FFFD).
            guard check.kind == .text, check.mayMatchRepaired else { return false }
            return KeyCodec.sameKey(try decoder.value(at: check.field), bound[check.value])
        }
    }
}

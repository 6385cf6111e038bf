import DAOCore

/// Byte encodings of keys that sort, under LMDB's bytewise comparison, the way
/// the values sort (``StoredValue``'s order), and that are prefix-free, so keys
/// can be concatenated (parent key + child key, index fields one after another)
/// and a prefix selects exactly one parent's children or one index range.
///
/// - integers: 8 bytes big-endian with the sign bit flipped;
/// - reals: 8 bytes big-endian, sign bit flipped for positives and every bit
///   flipped for negatives (`-0.0` is stored as `0.0`, and every NaN as
///   `FF FF FF FF FF FF FF FF`, after `+infinity`: the core's
///   ``SortKey/ordered(_:)-(Double)``);
/// - text and blobs: the bytes with each `0x00` written `0x00 0xFF`, ended by
///   `0x00 0x00` (so a text is never empty, which LMDB keys may not be).
///
/// In index keys each value is preceded by a tag: `0x00` for null, `0x01`
/// otherwise, so nulls sort first.
enum KeyCodec {
    /// Appends an integer.
    @inline(__always)
    static func append(integer value: Int64, to bytes: inout [UInt8]) {
        let ordered = UInt64(bitPattern: value) ^ (1 << 63)
        withUnsafeBytes(of: ordered.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Sets `bytes` to the encoding of `value` (as ``append(integer:to:)``
    /// appends it), writing over the array's bytes when it has the size
    /// already, as a reused key buffer does.
    @inline(__always)
    static func set(integers value: Int64, in bytes: inout [UInt8]) {
        resize(&bytes, to: 8)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: (UInt64(bitPattern: value) ^ (1 << 63)).bigEndian, as: UInt64.self)
        }
    }

    /// Sets `bytes` to the encodings of `first` then `second`, as
    /// ``set(integers:in:)`` does for one.
    @inline(__always)
    static func set(integers first: Int64, _ second: Int64, in bytes: inout [UInt8]) {
        resize(&bytes, to: 16)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: (UInt64(bitPattern: first) ^ (1 << 63)).bigEndian, as: UInt64.self)
            raw.storeBytes(of: (UInt64(bitPattern: second) ^ (1 << 63)).bigEndian, toByteOffset: 8, as: UInt64.self)
        }
    }

    @inline(__always)
    private static func resize(_ bytes: inout [UInt8], to size: Int) {
        guard bytes.count != size else { return }
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: repeatElement(0, count: size))
    }

    /// Appends a real.
    static func append(real value: Double, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: SortKey.ordered(value).bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends text or blob bytes, escaped and terminated.
    static func append(escaped source: some Sequence<UInt8>, to bytes: inout [UInt8]) {
        for byte in source {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
        }
        bytes.append(0)
        bytes.append(0)
    }

    /// Appends a primary key (no tag).
    @inline(__always)
    static func append<K: PrimaryKeyValue>(primaryKey key: K, to bytes: inout [UInt8]) {
        append(untagged: key.storedValue, to: &bytes)
    }

    /// Appends a stored value without a tag (for primary keys).
    static func append(untagged value: StoredValue, to bytes: inout [UInt8]) {
        switch value {
        case .null: break
        case .integer(let value): append(integer: value, to: &bytes)
        case .real(let value): append(real: value, to: &bytes)
        case .text(let value): append(escaped: value.utf8, to: &bytes)
        case .blob(let value): append(escaped: value, to: &bytes)
        }
    }

    /// Appends one field of an index key: a null/present tag, then the value.
    static func append(indexed value: StoredValue, to bytes: inout [UInt8]) {
        if case .null = value {
            bytes.append(0)
        } else {
            bytes.append(1)
            append(untagged: value, to: &bytes)
        }
    }

    /// Whether `a` and `b` have the same index key (``append(indexed:to:)``)
    /// without encoding them: nulls alike, integers equal, reals with the
    /// same bits once `-0.0` is `0.0` (any two NaNs alike), text with the same UTF-8 bytes (not
    /// Swift's `==`, which is canonical equivalence), blobs equal.
    static func sameKey(_ a: StoredValue, _ b: StoredValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.integer(let a), .integer(let b)): return a == b
        case (.real(let a), .real(let b)): return SortKey.ordered(a) == SortKey.ordered(b)
        case (.text(let a), .text(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.blob(let a), .blob(let b)): return a == b
        default: return false
        }
    }

    /// The primary key encoded in `bytes` (all of them), or `nil` when they do
    /// not hold one of type `K`.
    static func decodePrimaryKey<K: PrimaryKeyValue>(_ type: K.Type, from bytes: UnsafeRawBufferPointer) -> K? {
        switch K.fieldType {
        case .integer:
            guard bytes.count == 8 else { return nil }
            let ordered = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
            return K(storedValue: .integer(Int64(bitPattern: ordered ^ (1 << 63))))
        case .text:
            guard bytes.count >= 2, bytes[bytes.count - 1] == 0, bytes[bytes.count - 2] == 0 else { return nil }
            var utf8: [UInt8] = []
            utf8.reserveCapacity(bytes.count - 2)
            var index = 0
            while index < bytes.count - 2 {
                let byte = bytes[index]
                utf8.append(byte)
                index += byte == 0 ? 2 : 1
            }
            return K(storedValue: .text(String(decoding: utf8, as: UTF8.self)))
        default:
            return nil
        }
    }

    /// The primary key's bytes.
    static func encode<K: PrimaryKeyValue>(primaryKey key: K) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        append(primaryKey: key, to: &bytes)
        return bytes
    }
}

import Foundation

// Foundation's binary property-list writer stores equal numbers once per
// document: it keeps one object per distinct value and refers to it from
// every place the value occurs. Its test of "equal" is `==`, so `-0.0` and
// `0.0` would become one object (the first one met), and so would every NaN.
// It keeps apart numbers written at different sizes, though: a 4-byte real
// `-0.0` is never merged with an 8-byte real `0.0`. So a document that holds
// a `-0.0` or a NaN is written with every zero spelled by its sign:
//
// - `0.0` (of a `Double` or a `Float` field) as an 8-byte real;
// - `-0.0` (of either) as a 4-byte real;
// - a NaN as the canonical NaN of its field's type (a `Date`'s seconds too).
//
// Foundation's decoder reads a `Double` from a 4-byte real and a `Float` from
// an 8-byte real when the value is exact, as both zeros are, so the documents
// decode as any other, by this library and by one that wrote them without
// this spelling. A `Date` has one spelling (a plist date), so a `Date` of
// `-0.0` seconds cannot be kept apart from `0.0`: the store refuses it
// (`Entity.checkRealsForPropertyList(_:)`). A store writes its documents
// this way from the first persist that holds a `-0.0` or a NaN, or the
// first document it reads that may hold a 4-byte `-0.0`
// (``mayHoldRespelledZero(_:)``), until it is closed: documents without
// either are written as Foundation writes them, at no extra cost.

/// `value`, encoded with its reals spelled as described above.
struct RealsRespelled<Value: Encodable>: Encodable {
    var value: Value

    func encode(to encoder: any Encoder) throws {
        try value.encode(to: RespellingEncoder(base: encoder))
    }
}

/// How a real is written in a document that keeps its zeros apart.
enum RealSpelling {
    /// The one spelling of a `Date` whose seconds are a NaN.
    static let notADate = Date(storedSeconds: .nan)

    /// The value Foundation's encoder is given for `value`.
    static func write(_ value: Double, _ asDouble: (Double) throws -> Void, _ asFloat: (Float) throws -> Void) rethrows {
        if value == 0 {
            if value.sign == .minus { try asFloat(-0.0) } else { try asDouble(0) }
        } else if value.isNaN {
            try asDouble(.nan)
        } else {
            try asDouble(value)
        }
    }

    /// The value Foundation's encoder is given for `value`.
    static func write(_ value: Float, _ asDouble: (Double) throws -> Void, _ asFloat: (Float) throws -> Void) rethrows {
        if value == 0 {
            if value.sign == .minus { try asFloat(-0.0) } else { try asDouble(0) }
        } else if value.isNaN {
            try asFloat(.nan)
        } else {
            try asFloat(value)
        }
    }

    /// Whether a value of type `T` is encoded as it is (Foundation's encoder
    /// writes it natively, or it holds no real), rather than through a
    /// ``RespellingEncoder``.
    static func passesThrough<T>(_ type: T.Type) -> Bool {
        type == Date.self || type == Data.self || type == String.self || type == Bool.self
            || type == Int.self || type == Int64.self || type == Int32.self || type == Int16.self
            || type == Int8.self || type == UInt.self || type == UInt64.self || type == UInt32.self
            || type == UInt16.self || type == UInt8.self || type == UUID.self
    }
}

/// An encoder that hands everything to `base` but reals, which it spells
/// as ``RealSpelling`` says, at any depth.
struct RespellingEncoder: Encoder {
    let base: any Encoder

    var codingPath: [any CodingKey] { base.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { base.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RespellingKeyedContainer(base: base.container(keyedBy: type)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        RespellingUnkeyedContainer(base: base.unkeyedContainer())
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        RespellingSingleValueContainer(base: base.singleValueContainer())
    }
}

struct RespellingKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var base: KeyedEncodingContainer<Key>

    var codingPath: [any CodingKey] { base.codingPath }

    mutating func encodeNil(forKey key: Key) throws { try base.encodeNil(forKey: key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: String, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try RealSpelling.write(value, { try base.encode($0, forKey: key) }, { try base.encode($0, forKey: key) })
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try RealSpelling.write(value, { try base.encode($0, forKey: key) }, { try base.encode($0, forKey: key) })
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try base.encode(value, forKey: key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if let real = value as? Double {
            try encode(real, forKey: key)
        } else if let real = value as? Float {
            try encode(real, forKey: key)
        } else if let date = value as? Date, date.storedSeconds.isNaN {
            try base.encode(RealSpelling.notADate, forKey: key)
        } else if RealSpelling.passesThrough(T.self) {
            try base.encode(value, forKey: key)
        } else {
            try base.encode(RealsRespelled(value: value), forKey: key)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(RespellingKeyedContainer<NestedKey>(base: base.nestedContainer(keyedBy: keyType, forKey: key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        RespellingUnkeyedContainer(base: base.nestedUnkeyedContainer(forKey: key))
    }

    mutating func superEncoder() -> any Encoder { RespellingEncoder(base: base.superEncoder()) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { RespellingEncoder(base: base.superEncoder(forKey: key)) }
}

struct RespellingUnkeyedContainer: UnkeyedEncodingContainer {
    var base: any UnkeyedEncodingContainer

    var codingPath: [any CodingKey] { base.codingPath }
    var count: Int { base.count }

    mutating func encodeNil() throws { try base.encodeNil() }
    mutating func encode(_ value: Bool) throws { try base.encode(value) }
    mutating func encode(_ value: String) throws { try base.encode(value) }
    mutating func encode(_ value: Double) throws {
        try RealSpelling.write(value, { try base.encode($0) }, { try base.encode($0) })
    }
    mutating func encode(_ value: Float) throws {
        try RealSpelling.write(value, { try base.encode($0) }, { try base.encode($0) })
    }
    mutating func encode(_ value: Int) throws { try base.encode(value) }
    mutating func encode(_ value: Int8) throws { try base.encode(value) }
    mutating func encode(_ value: Int16) throws { try base.encode(value) }
    mutating func encode(_ value: Int32) throws { try base.encode(value) }
    mutating func encode(_ value: Int64) throws { try base.encode(value) }
    mutating func encode(_ value: UInt) throws { try base.encode(value) }
    mutating func encode(_ value: UInt8) throws { try base.encode(value) }
    mutating func encode(_ value: UInt16) throws { try base.encode(value) }
    mutating func encode(_ value: UInt32) throws { try base.encode(value) }
    mutating func encode(_ value: UInt64) throws { try base.encode(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if let real = value as? Double {
            try encode(real)
        } else if let real = value as? Float {
            try encode(real)
        } else if let date = value as? Date, date.storedSeconds.isNaN {
            try base.encode(RealSpelling.notADate)
        } else if RealSpelling.passesThrough(T.self) {
            try base.encode(value)
        } else {
            try base.encode(RealsRespelled(value: value))
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(RespellingKeyedContainer<NestedKey>(base: base.nestedContainer(keyedBy: keyType)))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        RespellingUnkeyedContainer(base: base.nestedUnkeyedContainer())
    }

    mutating func superEncoder() -> any Encoder { RespellingEncoder(base: base.superEncoder()) }
}

struct RespellingSingleValueContainer: SingleValueEncodingContainer {
    var base: any SingleValueEncodingContainer

    var codingPath: [any CodingKey] { base.codingPath }

    mutating func encodeNil() throws { try base.encodeNil() }
    mutating func encode(_ value: Bool) throws { try base.encode(value) }
    mutating func encode(_ value: String) throws { try base.encode(value) }
    mutating func encode(_ value: Double) throws {
        try RealSpelling.write(value, { try base.encode($0) }, { try base.encode($0) })
    }
    mutating func encode(_ value: Float) throws {
        try RealSpelling.write(value, { try base.encode($0) }, { try base.encode($0) })
    }
    mutating func encode(_ value: Int) throws { try base.encode(value) }
    mutating func encode(_ value: Int8) throws { try base.encode(value) }
    mutating func encode(_ value: Int16) throws { try base.encode(value) }
    mutating func encode(_ value: Int32) throws { try base.encode(value) }
    mutating func encode(_ value: Int64) throws { try base.encode(value) }
    mutating func encode(_ value: UInt) throws { try base.encode(value) }
    mutating func encode(_ value: UInt8) throws { try base.encode(value) }
    mutating func encode(_ value: UInt16) throws { try base.encode(value) }
    mutating func encode(_ value: UInt32) throws { try base.encode(value) }
    mutating func encode(_ value: UInt64) throws { try base.encode(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if let real = value as? Double {
            try encode(real)
        } else if let real = value as? Float {
            try encode(real)
        } else if let date = value as? Date, date.storedSeconds.isNaN {
            try base.encode(RealSpelling.notADate)
        } else if RealSpelling.passesThrough(T.self) {
            try base.encode(value)
        } else {
            try base.encode(RealsRespelled(value: value))
        }
    }
}

/// Whether a property-list document may hold a `-0.0`: it holds the bytes of
/// a 4-byte real `-0.0` (the marker 0x22, then 0x80 0 0 0), which only the
/// spelling above writes. Bytes of text or data may hold them too; a false
/// answer is exact, a true one only means the store writes its next
/// documents with that spelling, which reads back the same either way.
func mayHoldRespelledZero(_ data: Data) -> Bool {
    data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Bool in
        let count = bytes.count
        guard count >= 5 else { return false }
        var index = 0
        while index <= count - 5 {
            if bytes[index] == 0x22 && bytes[index + 1] == 0x80 && bytes[index + 2] == 0 && bytes[index + 3] == 0
                && bytes[index + 4] == 0
            {
                return true
            }
            index += 1
        }
        return false
    }
}

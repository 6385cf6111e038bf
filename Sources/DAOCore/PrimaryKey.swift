import Foundation

/// A type that can be a primary key: an integer, a string or a UUID, typed,
/// never a string standing in for a number.
///
/// Keys order the same way in every adapter: integers numerically, strings by
/// their UTF-8 bytes, UUIDs by their stored text (`uuidString`, upper-case
/// hex), which is the order of their bytes.
public protocol PrimaryKeyValue: FieldValue, Codable, Hashable, Comparable {
    /// The key a stored value holds, or `nil` when it holds another type or an
    /// out-of-range number.
    init?(storedValue: StoredValue)
}

extension Int64: PrimaryKeyValue {
    public init?(storedValue: StoredValue) {
        guard case .integer(let value) = storedValue else { return nil }
        self = value
    }
}

extension Int: PrimaryKeyValue {
    public init?(storedValue: StoredValue) {
        guard case .integer(let value) = storedValue, let int = Int(exactly: value) else { return nil }
        self = int
    }
}

extension String: PrimaryKeyValue {
    public init?(storedValue: StoredValue) {
        guard case .text(let value) = storedValue else { return nil }
        self = value
    }
}

extension UUID: PrimaryKeyValue {
    /// The UUID a stored text holds in the form ``StoredValue`` writes
    /// (`uuidString`: upper-case hex), or `nil` for any other text.
    public init?(storedValue: StoredValue) {
        guard case .text(let text) = storedValue, let uuid = UUID(uuidString: text), uuid.uuidString == text else {
            return nil
        }
        self = uuid
    }
}

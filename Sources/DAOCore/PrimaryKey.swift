/// A type that can be a primary key: an integer or a string, typed, never a
/// string standing in for a number.
///
/// Keys order the same way in every adapter: integers numerically, strings by
/// their UTF-8 bytes.
public protocol PrimaryKeyValue: FieldValue, Codable, Hashable, Comparable {}

extension Int64: PrimaryKeyValue {}
extension Int: PrimaryKeyValue {}
extension String: PrimaryKeyValue {}

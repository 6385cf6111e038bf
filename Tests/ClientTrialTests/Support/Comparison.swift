import Foundation

// Comparing answers bit for bit: text by its UTF-8 bytes, reals and dates by
// their bits (Swift's `==` takes NFC and NFD for one value, and a NaN for
// none).

/// A description of `value` that differs whenever a stored value could: text by
/// its UTF-8 bytes (not Swift's canonical equivalence), reals, floats and dates
/// by their bits, bytes as hex, optionals and arrays element by element. Written
/// into one string (hex digits appended byte by byte), since the trials compare
/// every record they read this way.
func fingerprint(_ value: Any) -> String {
    var out = ""
    out.reserveCapacity(256)
    appendFingerprint(value, to: &out)
    return out
}

private let hexDigits: [Unicode.Scalar] = Array("0123456789abcdef".unicodeScalars)

private func appendHex(_ bytes: some Sequence<UInt8>, to out: inout String) {
    for byte in bytes {
        out.unicodeScalars.append(hexDigits[Int(byte >> 4)])
        out.unicodeScalars.append(hexDigits[Int(byte & 0xF)])
    }
}

private func appendFingerprint(_ value: Any, to out: inout String) {
    switch value {
    case let text as String:
        out += "s["
        appendHex(text.utf8, to: &out)
        out += "]"
        return
    case let real as Double: out += "d\(real.bitPattern)"; return
    case let real as Float: out += "f\(real.bitPattern)"; return
    case let date as Date: out += "t\(date.timeIntervalSinceReferenceDate.bitPattern)"; return
    case let data as Data:
        out += "b["
        appendHex(data, to: &out)
        out += "]"
        return
    case let uuid as UUID: out += "u\(uuid.uuidString)"; return
    case let zone as Zone: out += "z\(zone.rawValue)"; return
    case let grade as Grade: out += "g\(grade.rawValue)"; return
    default: break
    }
    let mirror = Mirror(reflecting: value)
    switch mirror.displayStyle {
    case .optional:
        guard let wrapped = mirror.children.first else {
            out += "nil"
            return
        }
        out += "?"
        appendFingerprint(wrapped.value, to: &out)
    case .collection:
        out += "["
        for (index, child) in mirror.children.enumerated() {
            if index > 0 { out += ";" }
            appendFingerprint(child.value, to: &out)
        }
        out += "]"
    case .struct:
        out += "{"
        for (index, child) in mirror.children.enumerated() {
            if index > 0 { out += "," }
            out += child.label ?? ""
            out += ":"
            appendFingerprint(child.value, to: &out)
        }
        out += "}"
    default:
        out += "\(value)"
    }
}

/// Whether two answers are the same records, bit for bit, in the same order.
func sameBits<T>(_ left: [T], _ right: [T]) -> Bool {
    left.count == right.count && zip(left, right).allSatisfy { fingerprint($0) == fingerprint($1) }
}

/// Where two answers first differ, for a failure message.
func firstDifference<T>(_ got: [T], _ expected: [T]) -> String {
    if got.count != expected.count { return "\(got.count) records instead of \(expected.count)" }
    for (index, (left, right)) in zip(got, expected).enumerated() where fingerprint(left) != fingerprint(right) {
        return "record \(index): got \(left), expected \(right)"
    }
    return "none"
}

/// Whether `a` and `b` are equal and spelled with the same Unicode scalars
/// (Swift's `==` on `String` takes NFC and NFD for one value).
func exactly<T: Equatable>(_ a: T, _ b: T) -> Bool {
    // A NaN is unequal to itself under `==`: then the bits decide
    // (`fingerprint`; Foundation cannot describe a date whose time is NaN).
    guard a == b else { return fingerprint(a) == fingerprint(b) }
    return Array(String(reflecting: a).utf8) == Array(String(reflecting: b).utf8)
}


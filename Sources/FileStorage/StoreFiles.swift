import DAOCore
import Foundation

/// The names of the files a ``FileStore`` writes, and the tests that tell them
/// from anyone else's.
enum StoreFiles {
    /// A new random store identity: 32 lowercase hex digits.
    static func newStoreId() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let word = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - word.count) + word
        }.joined()
    }

    static func isStoreId(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { isHexDigit($0) }
    }

    /// `dao-<storeId>-<generation>-<entity>.<ext>`, the entity's name with
    /// everything but ASCII letters, digits and `_` percent-encoded.
    static func documentName(storeId: String, generation: UInt64, entity: String, format: FileFormat) -> String {
        var escaped = ""
        for byte in entity.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F
            {
                escaped.append(Character(Unicode.Scalar(byte)))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                escaped += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return "dao-\(storeId)-\(generation)-\(escaped).\(format.fileExtension)"
    }

    /// Whether `name` is a document of the store with identity `storeId`.
    static func isOwnedDocument(_ name: String, storeId: String) -> Bool {
        isDocumentOfAnyStore(name) && name.hasPrefix("dao-\(storeId)-")
    }

    /// Whether `name` has the shape of a version 2 document of any store.
    static func isDocumentOfAnyStore(_ name: String) -> Bool {
        guard let stem = stripExtension(name) else { return false }
        let bytes = Array(stem.utf8)
        // "dao-" + 32 hex + "-" + digits + "-" + at least one byte
        guard bytes.count >= 4 + 32 + 1 + 1 + 1 + 1, bytes.starts(with: Array("dao-".utf8)) else { return false }
        guard bytes[4..<36].allSatisfy(isHexDigit), bytes[36] == UInt8(ascii: "-") else { return false }
        var position = 37
        while position < bytes.count && bytes[position] >= 0x30 && bytes[position] <= 0x39 { position += 1 }
        return position > 37 && position + 1 < bytes.count && bytes[position] == UInt8(ascii: "-")
    }

    /// Whether `name` has the shape of a version 1 document: `<word>-<digits>.<ext>`.
    static func isVersion1DocumentName(_ name: String) -> Bool {
        guard let stem = stripExtension(name), let dash = stem.lastIndex(of: "-") else { return false }
        let generation = stem[stem.index(after: dash)...]
        return dash != stem.startIndex && !generation.isEmpty && generation.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// Whether `name` may be removed when a commit supersedes it: a document of
    /// this store, or a version 1 document of `entity` named by the manifest.
    static func mayRemoveSuperseded(_ name: String, entity: String, storeId: String?) -> Bool {
        if let storeId, isOwnedDocument(name, storeId: storeId) { return true }
        return isVersion1DocumentName(name) && name.hasPrefix("\(entity)-") && isPlainFileName(name)
    }

    /// The temporary file `FileIO.replace` writes the manifest to.
    static func isManifestTemporary(_ name: String) -> Bool {
        let prefix = ".\(Manifest.fileName)."
        guard name.hasPrefix(prefix), name.hasSuffix(".tmp") else { return false }
        let pid = name.dropFirst(prefix.count).dropLast(4)
        return !pid.isEmpty && pid.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// A name that stays inside the directory: no separator, not `.` or `..`.
    static func isPlainFileName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.utf8.contains(0)
    }

    /// Whether the file decodes as a store document (as JSON or as a property list).
    static func readsAsDocument(_ url: URL) -> Bool {
        guard let data = FileManager.default.contents(atPath: url.path) else { return false }
        // Failing to decode is the answer here ("not a store document"), not an
        // error to report: the file is then left alone as the user's.
        do {
            _ = try JSONDecoder().decode(DocumentHeader.self, from: data)
            return true
        } catch {}
        do {
            _ = try PropertyListDecoder().decode(DocumentHeader.self, from: data)
            return true
        } catch {
            return false
        }
    }

    private static func stripExtension(_ name: String) -> Substring? {
        for format in FileFormat.allCases where name.hasSuffix(".\(format.fileExtension)") {
            return name.dropLast(format.fileExtension.count + 1)
        }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }
}

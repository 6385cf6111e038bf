/// The name of a named database (an entity's, or one of its `#id` and index
/// databases) as a dictionary key: equal when its UTF-8 bytes are, as LMDB
/// compares names. `String`'s `==` and hash take canonically equivalent text
/// for one value, so two entities spelled in NFC and in NFD (two databases to
/// LMDB) would share the first one's handle, and its records.
struct DatabaseName: Hashable, Sendable {
    /// The name.
    let text: String

    init(_ text: String) {
        self.text = text
    }

    static func == (lhs: DatabaseName, rhs: DatabaseName) -> Bool {
        let contiguous = lhs.text.utf8.withContiguousStorageIfAvailable { left in
            rhs.text.utf8.withContiguousStorageIfAvailable { right in left.elementsEqual(right) }
        }
        return (contiguous ?? nil) ?? lhs.text.utf8.elementsEqual(rhs.text.utf8)
    }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = text.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for byte in text.utf8 { hasher.combine(byte) }
        }
    }
}

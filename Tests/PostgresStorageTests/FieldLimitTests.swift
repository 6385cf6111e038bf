import DAOCore
import Foundation
import Testing

@testable import PostgresStorage

// PostgreSQL stores at most 1 GiB less one byte in a field: a text or bytes
// value beyond it is refused while the batch is encoded, with an encoding
// error that names the field, before anything reaches a server (no server
// needed here).
@Suite("PostgreSQL: a value beyond a field's 1 GiB")
struct FieldLimitTests {
    @Test("the limit is PostgreSQL's")
    func limit() {
        #expect(ColumnArrays.fieldLimit == 1_073_741_823)
    }

    // The encoder's own limit lowered to 64 bytes, so as not to allocate 1 GiB.
    @Test("text, text that escaping lengthens, and bytes one byte past the limit are refused; at the limit they are written",
          arguments: ["text", "escaped", "bytes"])
    func refusedPastTheLimit(kind: String) throws {
        let limit = 64
        for (count, refused) in [(limit, false), (limit + 1, true)] {
            var arrays = ColumnArrays(
                types: [.integer, kind == "bytes" ? .blob : .text], entity: "notes", rows: 1, fieldLimit: limit)
            try arrays.encode(Int64(1))
            if kind == "text" {
                try arrays.encode(String(repeating: "a", count: count))
            } else if kind == "escaped" {
                // U+0001 is sent escaped, as two bytes: half as many characters reach `count` bytes.
                try arrays.encode(String(repeating: "\u{1}", count: count / 2) + String(repeating: "a", count: count % 2))
            } else {
                try arrays.encode(Data(count: count))
            }
            if refused {
                let error = #expect(throws: StorageError.self) { try arrays.endRow() }
                #expect(error?.kind == .encoding)
                #expect(error?.message.contains("field 1 holds \(count) bytes") == true, "\(String(describing: error))")
            } else {
                try arrays.endRow()
                #expect(arrays.count == 1)
            }
        }
    }
}

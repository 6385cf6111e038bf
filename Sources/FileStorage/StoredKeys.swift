import DAOCore
import Foundation

/// The records of a document or delta with only their integer and text
/// values decoded (a primary key is one or the other): what a store reads
/// of an entity whose record type it has not loaded.
struct StoredKeys: Decodable {
    var records: [[String: KeyValue]]
    var erased: [KeyValue]?

    /// An integer or text value; anything else is not a key.
    struct KeyValue: Decodable {
        var storedValue: StoredValue?

        init(from decoder: any Decoder) throws {
            // A value of another type is told by the decoder's refusal.
            let container = try decoder.singleValueContainer()
            do {
                storedValue = .integer(try container.decode(Int64.self))
                return
            } catch is DecodingError {}
            do {
                storedValue = .text(try container.decode(String.self))
            } catch is DecodingError {
                storedValue = nil
            }
        }
    }
}

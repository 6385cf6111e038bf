/// RFC 4180 comma-separated values: fields with a comma, a quote, a carriage
/// return or a line feed are quoted, and quotes inside doubled.
public enum CSV {
    /// A malformed CSV text.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong, with the 1-based line where it was found.
        public let description: String
    }

    /// One field, quoted when it must be.
    public static func escape(_ field: String) -> String {
        let mustQuote = field.unicodeScalars.contains { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }
        guard mustQuote else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// One record, ended by CRLF as RFC 4180 asks.
    public static func line(_ fields: [String]) -> String {
        fields.map(escape).joined(separator: ",") + "\r\n"
    }

    /// A whole document: a header and rows.
    public static func document(header: [String], rows: [[String]]) -> String {
        ([header] + rows).map(line).joined()
    }

    /// Parses `text` into records of fields. Accepts LF or CRLF line ends, quoted
    /// fields with doubled quotes and embedded line breaks; a blank last line is
    /// not a record.
    /// - Throws: ``ParseError`` for an unterminated quote or text after a closing quote.
    public static func parse(_ text: String) throws -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var line = 1
        var iterator = Array(text.unicodeScalars)[...]
        var atFieldStart = true
        var inQuotes = false
        var afterClosingQuote = false
        func endRecord() {
            record.append(field)
            records.append(record)
            record = []
            field = ""
            atFieldStart = true
            afterClosingQuote = false
        }
        while let scalar = iterator.popFirst() {
            if inQuotes {
                if scalar == "\"" {
                    if iterator.first == "\"" {
                        iterator.removeFirst()
                        field.unicodeScalars.append("\"")
                    } else {
                        inQuotes = false
                        afterClosingQuote = true
                    }
                } else {
                    if scalar == "\n" { line += 1 }
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"" where atFieldStart:
                inQuotes = true
                atFieldStart = false
            case ",":
                record.append(field)
                field = ""
                atFieldStart = true
                afterClosingQuote = false
            case "\r" where iterator.first == "\n":
                iterator.removeFirst()
                endRecord()
                line += 1
            case "\n":
                endRecord()
                line += 1
            default:
                if afterClosingQuote {
                    throw ParseError(description: "line \(line): text after a closing quote")
                }
                atFieldStart = false
                field.unicodeScalars.append(scalar)
            }
        }
        if inQuotes { throw ParseError(description: "line \(line): a quoted field is not closed") }
        if !atFieldStart || !record.isEmpty || afterClosingQuote { endRecord() }
        return records
    }
}

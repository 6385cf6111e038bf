import DAOMacrosPlugin
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// The macros, with the conformances the compiler asks `@StoredRecord` for:
/// those the struct does not declare itself.
private func macros(conformances: [TypeSyntax] = ["Record", "FieldwiseRecord"]) -> [String: MacroSpec] {
    ["StoredRecord": MacroSpec(type: StoredRecordMacro.self, conformances: conformances), "Children": MacroSpec(type: ChildrenMacro.self)]
}

/// Expands `source` and checks the result and the diagnostics, recording any
/// mismatch as an issue of the calling test.
private func expect(
    _ source: String, expands expanded: String, diagnostics: [DiagnosticSpec] = [],
    conformances: [TypeSyntax] = ["Record", "FieldwiseRecord"], sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    assertMacroExpansion(
        source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros(conformances: conformances),
        failureHandler: { Issue.record(Comment(rawValue: $0.message), sourceLocation: sourceLocation) })
}

@Suite("@StoredRecord expansion")
struct StoredRecordExpansionTests {
    @Test func derivesTheEntityAndThePositionalCode() {
        expect(
            """
            @StoredRecord("notes", indexes: [Index("notes_by_pinned", on: ["pinned", "text"])])
            public struct NoteRecord {
                public var text: String
                public var id: Int64
                public var pinned: Bool?
                public var length: Int { text.count }
                public static var shared = 0
                var observed: Double = 0 {
                    didSet { print(observed) }
                }
            }
            """,
            expands: """
                public struct NoteRecord {
                    public var text: String
                    public var id: Int64
                    public var pinned: Bool?
                    public var length: Int { text.count }
                    public static var shared = 0
                    var observed: Double = 0 {
                        didSet { print(observed) }
                    }
                }

                extension NoteRecord: Record, FieldwiseRecord {
                    public typealias PrimaryKey = Int64

                    /// `notes`: the fields of the stored properties, primary key first.
                    public static let entity = DAOCore.Entity<NoteRecord>(
                        "notes",
                        primaryKey: "id", \\.id,
                        fields: [DAOCore.Field("text", \\.text), DAOCore.Field("pinned", \\.pinned), DAOCore.Field("observed", \\.observed)],
                        indexes: [Index("notes_by_pinned", on: ["pinned", "text"])]
                    )

                    /// Reads the fields in the order of ``entity``; relations start empty and the storage fills them.
                    public init(fields: inout some DAOCore.FieldReader) throws {
                        self.id = try fields.decode()
                        self.text = try fields.decode()
                        self.pinned = try fields.decodeIfPresent()
                        self.observed = try fields.decode()
                    }

                    /// Writes the fields in the order of ``entity``; the storage writes the relations.
                    public func write(fields: inout some DAOCore.FieldWriter) throws {
                        try fields.encode(self.id)
                        try fields.encode(self.text)
                        try fields.encode(self.pinned)
                        try fields.encode(self.observed)
                    }
                }
                """)
    }

    @Test func childrenAreRelationsAndTheKeyCanBeNamed() {
        expect(
            """
            @StoredRecord("books", primaryKey: "isbn", ownedBy: Author.self)
            struct Book: Record {
                typealias PrimaryKey = String
                let isbn: String
                var authorId: String
                @Children(foreignKey: "bookIsbn") var chapters: [Chapter]
            }
            """,
            expands: """
                struct Book: Record {
                    typealias PrimaryKey = String
                    let isbn: String
                    var authorId: String
                    var chapters: [Chapter]
                }

                extension Book: FieldwiseRecord {
                    /// `books`: the fields of the stored properties, primary key first.
                    static let entity = DAOCore.Entity<Book>(
                        "books",
                        primaryKey: "isbn", \\.isbn,
                        fields: [DAOCore.Field("authorId", \\.authorId)],
                        relations: [DAOCore.Relation<Book, Chapter>("chapters", \\.chapters, foreignKey: "bookIsbn", \\.bookIsbn)],
                        ownedBy: Author.self
                    )

                    /// Reads the fields in the order of ``entity``; relations start empty and the storage fills them.
                    init(fields: inout some DAOCore.FieldReader) throws {
                        self.isbn = try fields.decode()
                        self.authorId = try fields.decode()
                        self.chapters = []
                    }

                    /// Writes the fields in the order of ``entity``; the storage writes the relations.
                    func write(fields: inout some DAOCore.FieldWriter) throws {
                        try fields.encode(self.isbn)
                        try fields.encode(self.authorId)
                    }
                }
                """,
            conformances: ["FieldwiseRecord"])
    }

    @Test func refusesPropertiesThatCannotBeOneField() {
        expect(
            """
            @StoredRecord("things")
            struct Thing {
                var id: Int64
                var tags: [String]
                var scores: [String: Double]
                var pair: (Int, Int)
                var callback: () -> Void
                var anything: Any
                var shape: any Sendable
                lazy var cached: Int = 0
                let fixed = 3
                var inferred = "text"
            }
            """,
            expands: """
                struct Thing {
                    var id: Int64
                    var tags: [String]
                    var scores: [String: Double]
                    var pair: (Int, Int)
                    var callback: () -> Void
                    var anything: Any
                    var shape: any Sendable
                    lazy var cached: Int = 0
                    let fixed = 3
                    var inferred = "text"
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'tags' cannot be a stored field: an array is not one field; mark an array of child records @Children(foreignKey:), store bytes as Data",
                    line: 4, column: 15),
                DiagnosticSpec(message: "'scores' cannot be a stored field: a dictionary is not one field", line: 5, column: 17),
                DiagnosticSpec(message: "'pair' cannot be a stored field: a tuple is not one field", line: 6, column: 15),
                DiagnosticSpec(message: "'callback' cannot be a stored field: a function cannot be stored", line: 7, column: 19),
                DiagnosticSpec(message: "'anything' cannot be a stored field: 'Any' has no storage class", line: 8, column: 19),
                DiagnosticSpec(
                    message: "'shape' cannot be a stored field: an existential or opaque type has no storage class",
                    line: 9, column: 16),
                DiagnosticSpec(message: "'cached' is lazy; a stored field must be a plain stored property", line: 10, column: 5),
                DiagnosticSpec(
                    message: "'fixed' is a 'let' with an initial value, so it cannot be read back; make it 'var' or computed",
                    line: 11, column: 9),
                DiagnosticSpec(message: "'inferred' needs a type annotation: @StoredRecord reads a field's type from it", line: 12, column: 9),
            ])
    }

    @Test func refusesDeclarationsItCannotStore() {
        expect(
            """
            @StoredRecord("kinds")
            enum Kind {
                case a
            }
            """,
            expands: """
                enum Kind {
                    case a
                }
                """,
            diagnostics: [DiagnosticSpec(message: "@StoredRecord applies to a struct", line: 1, column: 1)])
        expect(
            """
            @StoredRecord("notes")
            struct Note {
                var key: String
            }
            """,
            expands: """
                struct Note {
                    var key: String
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "no stored property 'id' for the primary key; name another with @StoredRecord(_:primaryKey:)",
                    line: 1, column: 1)
            ])
        expect(
            """
            @StoredRecord("notes")
            struct Note {
                var id: String?
            }
            """,
            expands: """
                struct Note {
                    var id: String?
                }
                """,
            diagnostics: [DiagnosticSpec(message: "the primary key 'id' cannot be optional", line: 1, column: 1)])
        expect(
            """
            @StoredRecord("notes")
            struct Note {
                var id: Int64
                @Children(foreignKey: "noteId") var tag: Tag
                @Children var replies: [Reply]
                enum CodingKeys: String, CodingKey {
                    case id, tag, replies
                }
            }
            """,
            expands: """
                struct Note {
                    var id: Int64
                    var tag: Tag
                    var replies: [Reply]
                    enum CodingKeys: String, CodingKey {
                        case id, tag, replies
                    }
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Children property 'tag' must be an array of child records, such as [BookRecord]", line: 4,
                    column: 46),
                DiagnosticSpec(
                    message: "@Children needs the child's foreign key field as a string literal: @Children(foreignKey: \"authorId\")",
                    line: 5, column: 5),
                DiagnosticSpec(
                    message: "@StoredRecord names each field after its property; a custom CodingKeys would store it under another name",
                    line: 6, column: 10),
            ])
    }
}

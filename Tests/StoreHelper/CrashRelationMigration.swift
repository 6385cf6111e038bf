import DAOCore
import DialogGraph
import Foundation

// The helper's commands for the kill -9 test of the migrations that add a
// relation (the lightweight step, to a new child entity) and drop it again
// (`.dropRelation`):
//
//   crash-helper migrate-labels <backend> <dir> <seed> <count>          authors gain `labels`; "migrating", then "done 0"
//   crash-helper verify-labels  <backend> <dir> <seed> <count> [labelled] the state after <count> transactions, either
//                                                                        before the migration ("ok old") or after it, every
//                                                                        author with no labels ("ok new"), or with
//                                                                        `labelled`, the labels `write-labels` wrote
//   crash-helper write-labels   <backend> <dir> <seed> <count>          stores labels (with notes) for every author
//   crash-helper migrate-drop   <backend> <dir> <seed> <count>          `.dropRelation("labels", from: "authors")`
//   crash-helper verify-drop    <backend> <dir> <seed> <count>          either the labelled state ("ok old") or the
//                                                                        old authors with no label entity ("ok new")
//   crash-helper readd-labels   <backend> <dir> <seed> <count>          on a dropped store: the relation added again
//                                                                        starts empty ("ok empty")

/// The crash helper's authors, second release: they hold labels too.
struct LabelledAuthorRecord: Record, Hashable {
    typealias PrimaryKey = String
    var handle: String
    var name: String
    var born: Date?
    var rating: Double?
    var books: [CrashBookRecord]
    var labels: [AuthorLabelRecord]

    static let entity = Entity<LabelledAuthorRecord>(
        "authors", primaryKey: "handle", \.handle,
        fields: [Field("name", \.name), Field("born", \.born), Field("rating", \.rating)],
        indexes: [Index("authors_by_name", on: ["name"])],
        relations: [
            Relation("books", \.books, foreignKey: "authorHandle", \CrashBookRecord.authorHandle),
            Relation("labels", \.labels, foreignKey: "authorHandle", \AuthorLabelRecord.authorHandle),
        ])

    /// The author as the first release's type holds it (children in key order).
    var plain: AuthorRecord {
        AuthorRecord(handle: handle, name: name, born: born, rating: rating, books: books).normalized
    }
}

/// A new child entity of authors, with an index and a child entity of its own.
struct AuthorLabelRecord: Record, Hashable {
    typealias PrimaryKey = String
    var id: String
    var authorHandle: String
    var text: String
    var rank: Int64?
    var notes: [LabelNoteRecord]

    static let entity = Entity<AuthorLabelRecord>(
        "author_labels", primaryKey: "id", \.id,
        fields: [Field("authorHandle", \.authorHandle), Field("text", \.text), Field("rank", \.rank)],
        indexes: [Index("author_labels_by_text", on: ["text"])],
        relations: [Relation("notes", \.notes, foreignKey: "labelId", \LabelNoteRecord.labelId)],
        ownedBy: LabelledAuthorRecord.self)
}

struct LabelNoteRecord: Record, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var labelId: String
    var body: String

    static let entity = Entity<LabelNoteRecord>(
        "label_notes", primaryKey: "id", \.id,
        fields: [Field("labelId", \.labelId), Field("body", \.body)],
        indexes: [Index("label_notes_by_body", on: ["body"])],
        ownedBy: AuthorLabelRecord.self)
}

enum RelationMigrations {
    static let labels = "v-labels: authors hold labels"
    static let drop = "v-drop: no labels"
    static let again = "v-again: labels again"
    static let labelEntities: Set<String> = ["author_labels", "label_notes"]

    static var adding: Migrator {
        var migrator = Migrator()
        migrator.register(labels, [.lightweight(to: LabelledAuthorRecord.self)])
        return migrator
    }

    static var dropping: Migrator {
        var migrator = adding
        migrator.register(drop, [.dropRelation("labels", from: "authors")])
        return migrator
    }

    static var addingAgain: Migrator {
        var migrator = dropping
        migrator.register(again, [.lightweight(to: LabelledAuthorRecord.self)])
        return migrator
    }
}

/// The labels `write-labels` gives the author `handle`: two, the first with
/// two notes; keys derived from the handle, so each author's are its own.
func expectedLabels(of handle: String, index: Int) -> [AuthorLabelRecord] {
    let first = "\(handle)#l1"
    let base = Int64(index) * 10
    return [
        AuthorLabelRecord(
            id: first, authorHandle: handle, text: "classic", rank: Int64(index),
            notes: [
                LabelNoteRecord(id: base + 1, labelId: first, body: "first 🚀 of \(handle)"),
                LabelNoteRecord(id: base + 2, labelId: first, body: "second\u{0}"),
            ]),
        AuthorLabelRecord(id: "\(handle)#l2", authorHandle: handle, text: "nul\u{0}label", rank: nil, notes: []),
    ]
}

func normalizedLabels(_ labels: [AuthorLabelRecord]) -> [AuthorLabelRecord] {
    labels.map { label in
        var label = label
        label.notes.sort { $0.id < $1.id }
        return label
    }.sorted { $0.id.unicodeScalars.lexicographicallyPrecedes($1.id.unicodeScalars) }
}

/// Each stored author's handle, in a fixed order, with its expected labels.
func labelPlan(_ state: State) -> [String: [AuthorLabelRecord]] {
    var plan: [String: [AuthorLabelRecord]] = [:]
    for (index, handle) in state.authors.keys.sorted(by: { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) })
        .enumerated()
    {
        plan[handle] = normalizedLabels(expectedLabels(of: handle, index: index))
    }
    return plan
}

func migratable(_ store: any Store) throws -> any MigratableStore {
    guard let store = store as? any MigratableStore else {
        throw StorageError(.invalidArgument, .open, message: "the store cannot run migrations")
    }
    return store
}

func recordedSchemas(_ store: any MigratableStore) throws -> [String: EntitySchema] {
    try store.withMigrationTransaction { try $0.recordedSchemas() }
}

func runMigrator(_ migrator: Migrator, _ store: any Store) throws -> Int32 {
    let store = try migratable(store)
    say("migrating")
    try migrator.migrate(store)
    say("done 0")
    return 0
}

/// The old state (no migration of these applied), read with the first
/// release's types through every access path.
func verifyUnlabelled(_ store: any Store, _ expected: State, _ label: String) throws -> Int32 {
    let (found, problems) = try Handles(store).state()
    if let problem = problems.first {
        say("wrong (\(label)): \(problem)")
        return 20
    }
    guard found == expected else {
        say("wrong (\(label)): \(describeDifference(found, expected))")
        return 20
    }
    return 0
}

/// The store read with the labelled authors: every committed value of
/// `expected`, and exactly the labels of `labels` (none when empty).
func verifyLabelled(_ store: any Store, _ expected: State, labels: [String: [AuthorLabelRecord]]) throws -> [String] {
    let authors = try store.anyStorage(for: LabelledAuthorRecord.self)
    let labelStorage = try store.anyStorage(for: AuthorLabelRecord.self)
    let notes = try store.anyStorage(for: LabelNoteRecord.self)
    var problems: [String] = []
    var found = State()
    for author in try authors.readAll() {
        found.authors[author.handle] = author.plain
        let stored = normalizedLabels(author.labels)
        if stored != labels[author.handle] ?? [] {
            problems.append("labels of '\(author.handle)': \(stored), expected \(labels[author.handle] ?? [])")
        }
    }
    // Authors by the stored index and by key, through the new type.
    for name in Set(expected.authors.values.map(\.name)).sorted() {
        let byName = try authors.read(where: #Predicate { $0.name == name }).map(\.handle).sorted()
        let wanted = expected.authors.values.filter { $0.name == name }.map(\.handle).sorted()
        if byName != wanted { problems.append("authors named '\(name)': \(byName), expected \(wanted)") }
    }
    for author in expected.authors.values {
        if try authors.read(primaryKey: author.handle)?.plain != author {
            problems.append("author '\(author.handle)' read by key differs")
        }
    }
    let labelCount = labels.values.reduce(0) { $0 + $1.count }
    let noteCount = labels.values.reduce(0) { $0 + $1.reduce(0) { $0 + $1.notes.count } }
    if try labelStorage.count() != labelCount { problems.append("labels: \(try labelStorage.count()) stored, \(labelCount) expected") }
    if try notes.count() != noteCount { problems.append("label notes: \(try notes.count()) stored, \(noteCount) expected") }
    let classic = try labelStorage.count(where: #Predicate { $0.text == "classic" })
    if classic != labels.count { problems.append("labels 'classic' by index: \(classic), expected \(labels.count)") }
    let seconds = try notes.count(where: #Predicate { $0.body == "second\u{0}" })
    if seconds != labels.count { problems.append("notes 'second' by index: \(seconds), expected \(labels.count)") }
    let unlabelled = try authors.count(where: #Predicate { $0.labels.isEmpty })
    let wantedUnlabelled = expected.authors.count - labels.count
    if unlabelled != wantedUnlabelled { problems.append("authors with no labels: \(unlabelled), expected \(wantedUnlabelled)") }
    // Books and chapters are read through the authors above: their own
    // storages name the first release's authors as their owner, which the
    // store no longer records. The dialogs, through the DAO.
    let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
    for dialog in try dialogs.read() { found.dialogs[dialog.uniqueId] = normalized(dialog) }
    if try store.anyStorage(for: MessageRecord.self).count() != expected.messages {
        problems.append("messages stored on their own differ from \(expected.messages)")
    }
    if found != expected { problems.append(describeDifference(found, expected)) }
    return problems
}

/// `verify-labels`: before the label migration, or after it.
func verifyLabelsCommand(_ store: any Store, seed: UInt64, count: Int, labelled: Bool) throws -> Int32 {
    let expected = State(after: count, seed: seed)
    let applied = try Migrator.state(of: try migratable(store)).applied
    if applied.isEmpty {
        guard !labelled else {
            say("wrong: labels were written but the store records no migration")
            return 20
        }
        let verdict = try verifyUnlabelled(store, expected, "old")
        if verdict == 0 { say("ok old") }
        return verdict
    }
    guard applied == [RelationMigrations.labels] else {
        say("wrong: the store records the migrations \(applied)")
        return 20
    }
    let problems = try verifyLabelled(store, expected, labels: labelled ? labelPlan(expected) : [:])
    if let problem = problems.first {
        say("wrong (new): \(problem)")
        return 20
    }
    say("ok new")
    return 0
}

/// `write-labels`: every author stored again with its labels and their notes.
func writeLabelsCommand(_ store: any Store, seed: UInt64, count: Int) throws -> Int32 {
    let plan = labelPlan(State(after: count, seed: seed))
    let authors = try store.anyStorage(for: LabelledAuthorRecord.self)
    var written: [LabelledAuthorRecord] = []
    for var author in try authors.readAll() {
        author.labels = plan[author.handle] ?? []
        written.append(author)
    }
    try authors.persist(written)
    say("done 0")
    return 0
}

/// `verify-drop`: the labelled state before `.dropRelation`, or after it the
/// first release's authors, every value there, and no label entity recorded.
func verifyDropCommand(_ store: any Store, seed: UInt64, count: Int) throws -> Int32 {
    let expected = State(after: count, seed: seed)
    let migratableStore = try migratable(store)
    let applied = try Migrator.state(of: migratableStore).applied
    let schemas = try recordedSchemas(migratableStore)
    if applied == [RelationMigrations.labels] {
        guard RelationMigrations.labelEntities.isSubset(of: schemas.keys) else {
            say("wrong (old): the label entities are not recorded: \(schemas.keys.sorted())")
            return 20
        }
        let problems = try verifyLabelled(store, expected, labels: labelPlan(expected))
        if let problem = problems.first {
            say("wrong (old): \(problem)")
            return 20
        }
        say("ok old")
        return 0
    }
    guard applied == [RelationMigrations.labels, RelationMigrations.drop] else {
        say("wrong: the store records the migrations \(applied)")
        return 20
    }
    let left = RelationMigrations.labelEntities.intersection(schemas.keys)
    guard left.isEmpty else {
        say("wrong (new): the dropped entities are still recorded: \(left.sorted())")
        return 20
    }
    if let authors = schemas["authors"], authors.relations.contains(where: { $0.name == "labels" }) {
        say("wrong (new): authors still record the relation 'labels'")
        return 20
    }
    let verdict = try verifyUnlabelled(store, expected, "new")
    if verdict == 0 { say("ok new") }
    return verdict
}

/// `readd-labels`: on a store the drop was applied to, the relation added
/// again by the lightweight step must start empty (nothing of the dropped
/// labels left in the engine), the old values intact.
func readdLabelsCommand(_ store: any Store, seed: UInt64, count: Int) throws -> Int32 {
    let migratableStore = try migratable(store)
    guard try RelationMigrations.addingAgain.migrate(migratableStore) == [RelationMigrations.again] else {
        say("wrong: the relation was not added again")
        return 20
    }
    let problems = try verifyLabelled(store, State(after: count, seed: seed), labels: [:])
    if let problem = problems.first {
        say("wrong (again): \(problem)")
        return 20
    }
    say("ok empty")
    return 0
}

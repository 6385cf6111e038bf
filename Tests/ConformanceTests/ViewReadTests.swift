import DAOCore
import DialogGraph
import Foundation
import Testing
import TestSupport

// `forEachView` lends a view of each record's fields where the engine keeps
// them. On every backend a view must answer, field by field, what `read`
// returns for the same query, in its order and number: for generated data
// and queries of several record shapes (String and integer keys, negative
// ones, optionals, booleans, dates, bytes, children), by key, through the
// DAO and prepared queries. Asking a field for what it is not, or for the
// value of a nil field, is a typed error; an error of the closure stops the
// read and reaches the caller as thrown.

private struct Stop: Error {}

/// A record of another shape: bytes, an optional integer and bytes, a
/// boolean, a date.
private struct AttachmentRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var name: String
    var payload: Data
    var thumbnail: Data?
    var size: Int64?
    var created: Date
    var flagged: Bool

    static let entity = Entity<AttachmentRecord>(
        "attachments",
        primaryKey: "id", \.id,
        fields: [
            Field("name", \.name), Field("payload", \.payload), Field("thumbnail", \.thumbnail), Field("size", \.size),
            Field("created", \.created), Field("flagged", \.flagged),
        ])
}

/// Attachment `n` of a generated set: bytes of every length up to 77, nil
/// thumbnails and sizes among them, negative keys.
private func attachment(_ n: Int, name: String) -> AttachmentRecord {
    let payload = Data((0..<(n * 7)).map { (byte: Int) -> UInt8 in UInt8(truncatingIfNeeded: byte &* 37 &+ n) })
    let thumbnail: Data? = n % 3 == 0 ? nil : Data([UInt8(n), 0, 255])
    let size: Int64? = n % 2 == 0 ? nil : Int64(n) << 40
    let created = Date(timeIntervalSinceReferenceDate: Double(n) * 1e6 - 3.25)
    return AttachmentRecord(
        id: Int64(n) - 6, name: name, payload: payload, thumbnail: thumbnail, size: size, created: created,
        flagged: n % 4 == 1)
}

/// The error `body` throws, if it throws one.
private func thrown(_ body: () throws -> Void) -> (any Error)? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

/// The fields a view lends, read through the accessor of each field's
/// declared type, as stored values.
private func storedValues<R: Record>(_ view: borrowing RecordView<R>) throws -> [StoredValue] {
    var values: [StoredValue] = []
    for (position, field) in R.entity.fields.enumerated() {
        if try view.isNull(position) {
            values.append(.null)
            continue
        }
        switch field.type {
        case .integer: values.append(.integer(try view.integer(position)))
        case .bool: values.append(.integer(try view.bool(position) ? 1 : 0))
        case .real: values.append(.real(try view.real(position)))
        case .date: values.append(.real(try view.date(position).timeIntervalSinceReferenceDate))
        case .text: values.append(.text(String(copying: try view.text(position))))
        case .blob: values.append(.blob(try view.bytes(position).withUnsafeBytes { Array($0) }))
        }
    }
    return values
}

/// The stored values of each record, as a view should lend them.
private func storedValues<R: Record>(of records: [R]) -> [[StoredValue]] {
    records.map { record in R.entity.fields.map { $0.value(in: record) } }
}

/// What `forEachView` lends for `query`.
private func viewed<R: Record>(_ storage: some Storage<R>, _ query: Query<R>) throws -> [[StoredValue]] {
    var rows: [[StoredValue]] = []
    try storage.forEachView(query) { view in rows.append(try storedValues(view)) }
    return rows
}

/// The integer keys (field 0) of lent rows; `Int64.min` for a key of
/// another kind.
private func integerKeys(_ rows: [[StoredValue]]) -> [Int64] {
    rows.map { row in
        guard case .integer(let key) = row.first else { return Int64.min }
        return key
    }
}

/// Whether two lists of stored values are the same value for value (a
/// real's bits, text by scalars).
private func same(_ a: [[StoredValue]], _ b: [[StoredValue]]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.count == $1.count && zip($0, $1).allSatisfy { $0 == $1 } }
}

@Suite("Conformance: views lend, field by field, what read returns")
struct ViewReadTests {
    @Test("generated data and queries: views answer what read returns, in its order", arguments: allBackends)
    func generatedQueries(backend: TestBackend) throws {
        let checks = try withGeneratedLibraries(backend, rounds: 2, seed: 20_261_130) { library in
            let (authors, books, chapters) = (library.authors, library.books, library.chapters)
            func check(_ condition: Bool, _ what: @autoclosure () -> String) { library.check(condition, what()) }
            check(same(try viewed(authors, Query()), storedValues(of: try authors.read(Query()))), "every author")
            check(same(try viewed(books, Query()), storedValues(of: try books.read(Query()))), "every book")
            check(same(try viewed(chapters, Query()), storedValues(of: try chapters.read(Query()))), "chapters")
            // A child entity in its parents' order: each parent's
            // children in key order, the order of the keys in LMDB.
            let byParent = Query<ChapterRecord>(sortedBy: [SortDescriptor(\.bookId)])
            check(same(try viewed(chapters, byParent), storedValues(of: try chapters.read(byParent))), "by book")
            for _ in 0..<40 {
                let book = library.generator.bookQuery(&library.random)
                check(
                    same(try viewed(books, book.query), storedValues(of: try books.read(book.query))),
                    "books \(book.name)")
                let chapter = library.generator.chapterQuery(&library.random)
                check(
                    same(try viewed(chapters, chapter.query), storedValues(of: try chapters.read(chapter.query))),
                    "chapters \(chapter.name)")
                let author = library.generator.authorQuery(&library.random)
                check(
                    same(try viewed(authors, author.query), storedValues(of: try authors.read(author.query))),
                    "authors \(author.name)")
            }
            // By key, and through a prepared query, with each author's
            // key and one that is not stored.
            let byAuthor = try PreparedQuery(
                where: #Predicate<BookRecord, String> { book, author in book.authorId == author },
                sortedBy: [SortDescriptor(\.year, order: .reverse)])
            for id in library.generator.authorIds + ["nobody"] {
                var lent: [[StoredValue]] = []
                let found = try authors.forEachView(primaryKey: id) { view in lent.append(try storedValues(view)) }
                let record = try authors.read(primaryKey: id)
                check(found == (record != nil), "author \(id) found")
                check(same(lent, storedValues(of: record.map { [$0] } ?? [])), "author \(id)")
                var prepared: [[StoredValue]] = []
                try books.forEachView(byAuthor, values: id) { view in prepared.append(try storedValues(view)) }
                check(same(prepared, storedValues(of: try books.read(byAuthor, id))), "prepared books of \(id)")
            }
        }
        #expect(checks > 2 * 120)
    }

    @Test("the dialog graph and bytes: negative keys, booleans, dates, nil, through the DAO", arguments: allBackends)
    func dialogsAndBytes(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            var random = SplitMix64(seed: 41)
            let ids: [Int64] = [7, -3, 0, Int64.min, 12, -1, Int64.max]
            let texts = ["", "naïve", "привет 🚀", String(repeating: "long text ", count: 40), "e\u{301}", "\u{0}"]
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let messages = try store.anyStorage(for: MessageRecord.self)
            try dialogs.persist(
                ids.enumerated().map { position, id in
                    DialogRecord(
                        id: id, isPinned: id < 0,
                        messages: (0..<Int(random.next() % 6)).map { n in
                            MessageRecord(
                                id: Int64(position * 10 + n) * (n % 2 == 0 ? 1 : -1), dialogId: id,
                                date: Date(timeIntervalSinceReferenceDate: Double(random.next() % 5) - 2.5),
                                text: texts[Int(random.next() % UInt64(texts.count))], senderId: 1, receiverId: 2,
                                type: Int64(n), isIncoming: n % 2 == 1, isRead: random.next() % 2 == 0)
                        })
                })
            let lowest = Int64.min
            let queries: [Query<MessageRecord>] = [
                Query(), Query(sortedBy: [SortDescriptor(\.dialogId)]), Query(sortedBy: [SortDescriptor(\.dialogId)], limit: 4),
                Query(where: #Predicate { $0.dialogId == -3 }), Query(where: #Predicate { $0.dialogId == 7 }, limit: 2),
                Query(where: #Predicate { $0.dialogId == lowest && !$0.isRead }, sortedBy: [SortDescriptor(\.date, order: .reverse)]),
                Query(sortedBy: [SortDescriptor(\.text)]), Query(limit: 0),
            ]
            for query in queries {
                #expect(same(try viewed(messages, query), storedValues(of: try messages.read(query))), "\(query)")
            }
            #expect(same(try viewed(dialogs, Query()), storedValues(of: try dialogs.read(Query()))))
            // The workload's query prepared, unlimited and limited: the
            // call's views as its read's records.
            let unread = try PreparedQuery(
                where: #Predicate<MessageRecord, Int64> { message, dialog in
                    message.dialogId == dialog && !message.isRead
                },
                sortedBy: [SortDescriptor(\.date, order: .reverse)])
            let firstTwo = try PreparedQuery(
                where: #Predicate<MessageRecord, Int64> { message, dialog in message.dialogId == dialog },
                sortedBy: [SortDescriptor(\.type)], limit: 2)
            for prepared in [unread, firstTwo] {
                for id in ids + [99] {
                    var lent: [[StoredValue]] = []
                    try messages.forEachView(prepared, values: id) { view in lent.append(try storedValues(view)) }
                    #expect(same(lent, storedValues(of: try messages.read(prepared, id))), "dialog \(id)")
                }
            }
            for id in ids + [99] {
                var lent: [[StoredValue]] = []
                try messages.forEachView(primaryKey: id) { view in lent.append(try storedValues(view)) }
                #expect(same(lent, storedValues(of: try messages.read(primaryKeys: [id]))), "message \(id)")
            }

            // Through the DAO: the records of the objects read.
            let dao = DAO(storage: messages, translator: MessageTranslator())
            var viewedTexts: [String] = []
            let text = try MessageRecord.entity.position(of: \.text)
            try dao.forEachView(where: #Predicate { $0.dialogId == 7 }, sortedBy: [SortDescriptor(\.date)]) { view in
                viewedTexts.append(String(copying: try view.text(text)))
            }
            let read = try dao.read(where: #Predicate { $0.dialogId == 7 }, sortedBy: [SortDescriptor(\.date)])
            #expect(viewedTexts == read.map(\.text))

            // Bytes, optional bytes and integers, nil among them.
            let attachments = try store.anyStorage(for: AttachmentRecord.self)
            try attachments.persist((0..<12).map { attachment($0, name: texts[$0 % texts.count]) })
            for query in [Query<AttachmentRecord>(), Query(sortedBy: [SortDescriptor(\.name)], limit: 5)] {
                #expect(same(try viewed(attachments, query), storedValues(of: try attachments.read(query))))
            }
        }
    }

    @Test("many equal sort values: views come in key order within each, with and without a limit", arguments: allBackends)
    func tiedSortValues(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            // Three dialogs of 60 messages on three dates, their keys
            // (negative ones among them) in no order of the dates or of
            // insertion, texts of several lengths.
            let texts = ["", "a", "naïve", String(repeating: "long text ", count: 60), "привет 🚀"]
            var stored: [MessageRecord] = []
            let dialogIds: [Int64] = [4, -2, 9]
            let dialogRecords = dialogIds.enumerated().map { position, dialogId in
                let messages = (0..<60).map { n -> MessageRecord in
                    let k = position * 60 + n
                    return MessageRecord(
                        id: Int64((k * 7919) % 181) - 90, dialogId: dialogId,
                        date: Date(timeIntervalSinceReferenceDate: Double((k * 13) % 3) * 86_400),
                        text: texts[k % texts.count], senderId: Int64(k), receiverId: 2, type: Int64(k % 4),
                        isIncoming: k % 2 == 0, isRead: (k / 3) % 2 == 0)
                }
                stored += messages
                return DialogRecord(id: dialogId, isPinned: false, messages: messages)
            }
            #expect(Set(stored.map(\.id)).count == stored.count)
            try store.anyStorage(for: DialogRecord.self).persist(dialogRecords)
            let messages = try store.anyStorage(for: MessageRecord.self)

            /// The keys of the stored messages `included` selects, by
            /// `order` and then by key ascending, at most `limit`: worked
            /// out here, not by a store.
            func expected(
                _ included: (MessageRecord) -> Bool, _ order: (MessageRecord, MessageRecord) -> ComparisonResult,
                limit: Int? = nil
            ) -> [Int64] {
                let keys = stored.filter(included).sorted { lhs, rhs in
                    switch order(lhs, rhs) {
                    case .orderedAscending: true
                    case .orderedDescending: false
                    case .orderedSame: lhs.id < rhs.id
                    }
                }.map(\.id)
                return limit.map { Array(keys.prefix($0)) } ?? keys
            }
            func compare<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
                a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
            }
            let byDate: (MessageRecord, MessageRecord) -> ComparisonResult = { compare($0.date, $1.date) }
            let byDateReversed: (MessageRecord, MessageRecord) -> ComparisonResult = { compare($1.date, $0.date) }
            let byKey: (MessageRecord, MessageRecord) -> ComparisonResult = { _, _ in .orderedSame }
            let byTypeThenNewest: (MessageRecord, MessageRecord) -> ComparisonResult = {
                let type = compare($0.type, $1.type)
                return type == .orderedSame ? compare($1.date, $0.date) : type
            }

            /// The keys the views of `query` come in, having checked each
            /// view against the record `read` returns at its place.
            func viewedKeys(_ query: Query<MessageRecord>) throws -> [Int64] {
                let lent = try viewed(messages, query)
                #expect(same(lent, storedValues(of: try messages.read(query))), "\(query)")
                return integerKeys(lent)
            }
            for limit in [nil, 1, 5, 17, 61] as [Int?] {
                for dialog in dialogIds + [99] {
                    let ofDialog: (MessageRecord) -> Bool = { $0.dialogId == dialog }
                    let unread: (MessageRecord) -> Bool = { $0.dialogId == dialog && !$0.isRead }
                    let cases: [(Query<MessageRecord>, [Int64])] = [
                        (
                            Query(
                                where: #Predicate { $0.dialogId == dialog }, sortedBy: [SortDescriptor(\.date, order: .reverse)],
                                limit: limit), expected(ofDialog, byDateReversed, limit: limit)
                        ),
                        (
                            Query(where: #Predicate { $0.dialogId == dialog }, sortedBy: [SortDescriptor(\.date)], limit: limit),
                            expected(ofDialog, byDate, limit: limit)
                        ),
                        (
                            Query(
                                where: #Predicate { $0.dialogId == dialog && !$0.isRead },
                                sortedBy: [SortDescriptor(\.date, order: .reverse)], limit: limit),
                            expected(unread, byDateReversed, limit: limit)
                        ),
                        (Query(where: #Predicate { $0.dialogId == dialog }, limit: limit), expected(ofDialog, byKey, limit: limit)),
                        (
                            Query(
                                where: #Predicate { $0.dialogId == dialog },
                                sortedBy: [SortDescriptor(\.type), SortDescriptor(\.date, order: .reverse)], limit: limit),
                            expected(ofDialog, byTypeThenNewest, limit: limit)
                        ),
                    ]
                    for (query, keys) in cases {
                        #expect(try viewedKeys(query) == keys, "\(query)")
                    }
                }
                let everyOne: (MessageRecord) -> Bool = { _ in true }
                let unread: (MessageRecord) -> Bool = { !$0.isRead }
                #expect(
                    try viewedKeys(Query(sortedBy: [SortDescriptor(\.date, order: .reverse)], limit: limit))
                        == expected(everyOne, byDateReversed, limit: limit))
                #expect(
                    try viewedKeys(Query(sortedBy: [SortDescriptor(\.date)], limit: limit))
                        == expected(everyOne, byDate, limit: limit))
                #expect(
                    try viewedKeys(
                        Query(where: #Predicate { !$0.isRead }, sortedBy: [SortDescriptor(\.date, order: .reverse)], limit: limit))
                        == expected(unread, byDateReversed, limit: limit))
            }

            // Prepared: the workload's query, and a dialog's messages by key.
            let unreadOf = try PreparedQuery(
                where: #Predicate<MessageRecord, Int64> { message, dialog in
                    message.dialogId == dialog && !message.isRead
                },
                sortedBy: [SortDescriptor(\.date, order: .reverse)])
            let messagesOf = try PreparedQuery(
                where: #Predicate<MessageRecord, Int64> { message, dialog in message.dialogId == dialog })
            for dialog in dialogIds + [99] {
                for (prepared, keys) in [
                    (unreadOf, expected({ $0.dialogId == dialog && !$0.isRead }, byDateReversed)),
                    (messagesOf, expected({ $0.dialogId == dialog }, byKey)),
                ] {
                    var lent: [[StoredValue]] = []
                    try messages.forEachView(prepared, values: dialog) { view in lent.append(try storedValues(view)) }
                    #expect(same(lent, storedValues(of: try messages.read(prepared, dialog))), "dialog \(dialog)")
                    #expect(integerKeys(lent) == keys, "dialog \(dialog)")
                }
            }

            // Runs of rows of several texts and bytes each, far more than
            // a few kilobytes of them, on two dates.
            let attachments = try store.anyStorage(for: AttachmentRecord.self)
            let storedAttachments = (0..<50).map { n in
                AttachmentRecord(
                    id: Int64((n * 31) % 50) - 20, name: texts[n % texts.count] + "\(n)",
                    payload: Data((0..<(n * 97)).map { UInt8(truncatingIfNeeded: $0 &+ n) }),
                    thumbnail: n % 3 == 0 ? nil : Data(repeating: UInt8(n), count: n * 13), size: Int64(n),
                    created: Date(timeIntervalSinceReferenceDate: Double(n % 2)), flagged: n % 5 == 0)
            }
            try attachments.persist(storedAttachments)
            for order in [SortOrder.forward, .reverse] {
                let query = Query<AttachmentRecord>(sortedBy: [SortDescriptor(\.created, order: order)])
                let lent = try viewed(attachments, query)
                #expect(same(lent, storedValues(of: try attachments.read(query))))
                let expected = storedAttachments.sorted { lhs, rhs in
                    lhs.created != rhs.created ? (lhs.created < rhs.created) == (order == .forward) : lhs.id < rhs.id
                }
                #expect(same(lent, storedValues(of: expected)))
            }

            // An error of the closure inside a run of equal dates stops the
            // read there.
            var lent = 0
            #expect(throws: Stop.self) {
                try messages.forEachView(
                    where: #Predicate { $0.dialogId == 4 }, sortedBy: [SortDescriptor(\.date, order: .reverse)]
                ) { _ in
                    lent += 1
                    if lent == 2 { throw Stop() }
                }
            }
            #expect(lent == 2)
        }
    }

    @Test("many tied dates: views and reads break ties by key ascending, sorted or not, with and without a limit", arguments: allBackends)
    func tiedDates(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let messages = try store.anyStorage(for: MessageRecord.self)
            // Three dates among 40 messages a dialog, one of them twice as
            // often, so that most dates tie; keys written out of order,
            // negative ones among them; about half of them unread.
            let dates = [0.0, 60.0, 0.0, -45.5]
            var written: [MessageRecord] = []
            for dialog: Int64 in [5, -2] {
                let children = (0..<40).map { n in
                    MessageRecord(
                        id: dialog * 1_000 + Int64((n * 37) % 40) - 20, dialogId: dialog,
                        date: Date(timeIntervalSinceReferenceDate: dates[(n * 7) % dates.count]),
                        text: "m\(n)", senderId: 1, receiverId: 2, type: Int64(n % 3), isIncoming: n % 2 == 0,
                        isRead: (n * 5) % 9 < 4)
                }
                written += children
                try dialogs.persist(DialogRecord(id: dialog, isPinned: false, messages: children))
            }
            let id = try MessageRecord.entity.position(of: \.id)
            var checked = 0
            // Newest first, oldest first, and in key order (no sort).
            for order in [SortOrder.reverse, .forward, nil] {
                for limit in [nil, 1, 3, 7, 100] as [Int?] {
                    let sort = order.map { [SortDescriptor(\MessageRecord.date, order: $0)] } ?? []
                    let unread = try PreparedQuery(
                        where: #Predicate<MessageRecord, Int64> { message, dialog in
                            message.dialogId == dialog && !message.isRead
                        },
                        sortedBy: sort, limit: limit)
                    for dialog: Int64 in [5, -2, 99] {
                        // The answer worked out here: the dialog's unread
                        // messages by date, ties by key ascending, limited.
                        let expected = written.filter { $0.dialogId == dialog && !$0.isRead }.sorted { a, b in
                            let (x, y) = (a.date.timeIntervalSinceReferenceDate, b.date.timeIntervalSinceReferenceDate)
                            guard let order, x != y else { return a.id < b.id }
                            return order == .reverse ? x > y : x < y
                        }.prefix(limit ?? Int.max).map(\.id)
                        if dialog != 99 { #expect(expected.count == min(limit ?? Int.max, 22)) }
                        let query = Query<MessageRecord>(
                            where: #Predicate { $0.dialogId == dialog && !$0.isRead }, sortedBy: sort, limit: limit)
                        let what = "\(String(describing: order)), limit \(String(describing: limit)), dialog \(dialog)"
                        // Three calls each: the later ones read the range
                        // in the direction the first one found better.
                        for _ in 0..<3 {
                            var lent: [Int64] = []
                            try messages.forEachView(unread, values: dialog) { view in
                                lent.append(try view.integer(id))
                            }
                            #expect(lent == expected, "prepared, \(what)")
                            #expect(try messages.read(unread, dialog).map(\.id) == expected)
                            var viewed: [Int64] = []
                            try messages.forEachView(query) { view in viewed.append(try view.integer(id)) }
                            #expect(viewed == expected, "query, \(what)")
                            #expect(try messages.read(query).map(\.id) == expected)
                            checked += expected.count
                        }
                    }
                }
            }
            #expect(checked > 500)
        }
    }

    @Test("a field asked for what it is not, a nil field, and an error of the closure", arguments: allBackends)
    func errors(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let attachments = try store.anyStorage(for: AttachmentRecord.self)
            try attachments.persist(
                (1...3).map { n in
                    AttachmentRecord(
                        id: Int64(n), name: "a\(n)", payload: Data([1, 2]), thumbnail: nil, size: nil,
                        created: Date(timeIntervalSinceReferenceDate: 0), flagged: false)
                })
            let name = try AttachmentRecord.entity.position(of: \.name)
            let size = try AttachmentRecord.entity.position(of: \.size)
            #expect(throws: StorageError.self) { try AttachmentRecord.entity.position(of: \.self) }
            var checked = 0
            try attachments.forEachView(limit: 1) { view in
                #expect(view.fieldCount == AttachmentRecord.entity.fields.count)
                let text = String(copying: try view.text(name))
                #expect(text == "a1")
                let wrongType = thrown { _ = try view.integer(name) } as? StorageError
                #expect(wrongType?.kind == .invalidArgument)
                let sizeIsNull = try view.isNull(size)
                #expect(sizeIsNull)
                let null = thrown { _ = try view.integer(size) } as? StorageError
                #expect(null?.kind == .decoding)
                let past = view.fieldCount
                let outOfRange = thrown { _ = try view.isNull(past) } as? StorageError
                #expect(outOfRange?.kind == .invalidArgument)
                checked += 1
            }
            #expect(checked == 1)
            var lent = 0
            #expect(throws: Stop.self) {
                try attachments.forEachView { _ in
                    lent += 1
                    throw Stop()
                }
            }
            #expect(lent == 1)
            lent = 0
            #expect(throws: Stop.self) {
                try attachments.forEachView(primaryKey: 2) { _ in
                    lent += 1
                    throw Stop()
                }
            }
            #expect(lent == 1)
            #expect(try attachments.forEachView(primaryKey: 99) { _ in Issue.record("no record has key 99") } == false)
        }
    }
}

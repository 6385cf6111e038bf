import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing

/// Each query of the corpus must give, through SQLite, exactly what
/// `Query.apply` gives in memory over the same records.
@Suite("Predicates compiled to SQL agree with in-memory evaluation")
struct PredicateDifferentialTests {
    static let cutoff = Date(timeIntervalSince1970: 1_700_000_000 + 40 * 60)
    static let hostile = "'); DROP TABLE messages; --"

    /// Messages of a small workload plus a few with awkward texts.
    static func messageRecords() throws -> [MessageRecord] {
        var records = try workloadRecords(dialogs: 6, messages: 12).flatMap(\.messages)
        let awkward = [hostile, "a\u{0}b", "the \"quoted\" 'text'", "🚀 launch", "café au lait", "", "thé", "the"]
        for (offset, text) in awkward.enumerated() {
            records.append(message(Int64(1000 + offset), dialog: 1, text: text, isRead: offset % 2 == 0))
        }
        return records
    }

    static let messagePredicates: [(String, Predicate<MessageRecord>)] = {
        let dialog: Int64 = 3
        let ids: [Int64] = [1, 5, 9, 1003]
        let noIds: [Int64] = []
        let cutoff = Self.cutoff
        let later = Self.cutoff.addingTimeInterval(3600)
        let hostile = Self.hostile
        let nul = "a\u{0}b"
        var list: [(String, Predicate<MessageRecord>)] = []
            list.append(("everything", #Predicate<MessageRecord> { _ in true }))
            list.append(("nothing", #Predicate<MessageRecord> { _ in false }))
            list.append(("dialog ==", #Predicate<MessageRecord> { $0.dialogId == dialog }))
            list.append(("dialog !=", #Predicate<MessageRecord> { $0.dialogId != dialog }))
            list.append(("unread of dialog", #Predicate<MessageRecord> { $0.dialogId == dialog && !$0.isRead }))
            list.append(("read", #Predicate<MessageRecord> { $0.isRead }))
            list.append(("isRead == false", #Predicate<MessageRecord> { $0.isRead == false }))
            list.append(("sender <", #Predicate<MessageRecord> { $0.senderId < 5000 }))
            list.append(("sender <=", #Predicate<MessageRecord> { $0.senderId <= 3 }))
            list.append(("sender >", #Predicate<MessageRecord> { $0.senderId > 5000 }))
            list.append(("sender >=", #Predicate<MessageRecord> { $0.senderId >= 5000 }))
            list.append(("constant on the left", #Predicate<MessageRecord> { 2 < $0.type }))
            list.append(("date after", #Predicate<MessageRecord> { $0.date > cutoff }))
            list.append(("date range", #Predicate<MessageRecord> { $0.date >= cutoff && $0.date <= later }))
            list.append(("or", #Predicate<MessageRecord> { $0.isRead || $0.isIncoming }))
            list.append(("not and", #Predicate<MessageRecord> { !($0.isRead && $0.type == 2) }))
            list.append(("not or", #Predicate<MessageRecord> { !($0.dialogId == 1 || $0.type != 0) }))
            list.append(("nested", #Predicate<MessageRecord> { ($0.type >= 2 && $0.type < 4) || ($0.dialogId == 2 && !$0.isIncoming) }))
            list.append(("in", #Predicate<MessageRecord> { ids.contains($0.id) }))
            list.append(("not in", #Predicate<MessageRecord> { !ids.contains($0.id) }))
            list.append(("empty in", #Predicate<MessageRecord> { noIds.contains($0.dialogId) }))
            list.append(("contains", #Predicate<MessageRecord> { $0.text.contains("hello") }))
            list.append(("contains emoji", #Predicate<MessageRecord> { $0.text.contains("🚀") }))
            list.append(("contains accented", #Predicate<MessageRecord> { $0.text.contains("café") }))
            list.append(("contains quote", #Predicate<MessageRecord> { $0.text.contains("'") }))
            list.append(("contains NUL", #Predicate<MessageRecord> { $0.text.contains(nul) }))
            list.append(("contains empty", #Predicate<MessageRecord> { $0.text.contains("") }))
            list.append(("prefix", #Predicate<MessageRecord> { $0.text.starts(with: "the") }))
            list.append(("prefix is case-sensitive", #Predicate<MessageRecord> { $0.text.starts(with: "The") }))
            list.append(("prefix accented", #Predicate<MessageRecord> { $0.text.starts(with: "caf") }))
            list.append(("prefix emoji", #Predicate<MessageRecord> { $0.text.starts(with: "🚀") }))
            list.append(("prefix empty", #Predicate<MessageRecord> { $0.text.starts(with: "") }))
            list.append(("not prefix", #Predicate<MessageRecord> { !$0.text.starts(with: "t") }))
            list.append(("hostile equality", #Predicate<MessageRecord> { $0.text == hostile }))
            list.append(("text equality", #Predicate<MessageRecord> { $0.text == "the" }))
            list.append(("text order", #Predicate<MessageRecord> { $0.text < "m" }))
            // Not translatable: answered in memory.
            list.append(("computed", #Predicate<MessageRecord> { $0.text.count > 100 }))
            list.append(("partly computed and", #Predicate<MessageRecord> { $0.dialogId == 2 && $0.text.count > 50 }))
            list.append(("partly computed or", #Predicate<MessageRecord> { $0.dialogId == 2 || $0.text.count > 200 }))
            list.append(("not computed", #Predicate<MessageRecord> { !($0.text.count > 30) }))
        return list
    }()

    static let messageSorts: [(String, [SortDescriptor<MessageRecord>])] = [
        ("unsorted", []),
        ("newest first", [SortDescriptor(\.date, order: .reverse)]),
        ("sender then date", [SortDescriptor(\.senderId), SortDescriptor(\.date, order: .reverse)]),
        ("type descending", [SortDescriptor(\.type, order: .reverse)]),
        ("text", [SortDescriptor(\.text)]),
        ("text, lexical (in memory)", [SortDescriptor(\.text, comparator: .lexical)]),
    ]

    @Test("messages: every predicate × sort × limit")
    func messages() throws {
        let records = try Self.messageRecords()
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist((1...6).map { DialogRecord(id: $0, isPinned: false, messages: []) })
            let storage = try database.storage(for: MessageRecord.self)
            try storage.persist(records)
            for (name, predicate) in Self.messagePredicates {
                for (sortName, sort) in Self.messageSorts {
                    for limit in [nil, 0, 1, 7] {
                        let query = Query(where: predicate, sortedBy: sort, limit: limit)
                        let expected = try query.apply(to: records)
                        let actual = try storage.read(query)
                        #expect(actual == expected, "\(name), \(sortName), limit \(limit.map(String.init) ?? "none")")
                    }
                }
                let expectedCount = try Query(where: predicate).apply(to: records).count
                #expect(try storage.count(where: predicate) == expectedCount, "count: \(name)")
            }
        }
    }

    @Test("translatable message predicates compile to SQL without an in-memory pass")
    func compiled() throws {
        let exact = Set(Self.messagePredicates.map(\.0)).subtracting([
            "computed", "partly computed and", "partly computed or", "not computed",
        ])
        for (name, predicate) in Self.messagePredicates where exact.contains(name) {
            let translation = QueryExpression.translate(predicate)
            #expect(translation.isExact, "\(name)")
            if case .constant = translation.expression { continue }
            #expect(PredicateSQL.compile(translation.expression, entity: MessageRecord.entity) != nil, "\(name)")
        }
    }

    @Test("erasing by predicate erases exactly the matching records")
    func eraseWhere() throws {
        let records = try Self.messageRecords()
        for (name, predicate) in Self.messagePredicates {
            try withDatabase { database in
                let dialogs = try database.storage(for: DialogRecord.self)
                try dialogs.persist((1...6).map { DialogRecord(id: $0, isPinned: false, messages: []) })
                let storage = try database.storage(for: MessageRecord.self)
                try storage.persist(records)
                let expected = try Query(where: predicate).apply(to: records)
                #expect(try storage.erase(where: predicate) == expected.count, "\(name)")
                let kept = Set(expected.map(\.id))
                #expect(try storage.readAll() == records.filter { !kept.contains($0.id) }.sorted { $0.id < $1.id }, "\(name)")
            }
        }
    }

    static let userPredicates: [(String, Predicate<UserRecord>)] = {
        let names = ["alice", "bob", "nobody"]
        let female = Gender.female
        let birth = Date(timeIntervalSinceReferenceDate: 0)
        let noBio: String? = nil
        var list: [(String, Predicate<UserRecord>)] = []
            list.append(("bio is nil", #Predicate<UserRecord> { $0.bio == nil }))
            list.append(("bio is not nil", #Predicate<UserRecord> { $0.bio != nil }))
            list.append(("bio equals", #Predicate<UserRecord> { $0.bio == "x" }))
            list.append(("bio not equals (null-safe)", #Predicate<UserRecord> { $0.bio != "x" }))
            list.append(("not bio equals (null-safe)", #Predicate<UserRecord> { !($0.bio == "x") }))
            list.append(("bio equals captured nil", #Predicate<UserRecord> { $0.bio == noBio }))
            list.append(("email empty", #Predicate<UserRecord> { $0.email == "" }))
            list.append(("gender", #Predicate<UserRecord> { $0.gender == female }))
            list.append(("gender not", #Predicate<UserRecord> { $0.gender != female }))
            list.append(("birth date equals", #Predicate<UserRecord> { $0.birthDate == birth }))
            list.append(("birth date nil or female", #Predicate<UserRecord> { $0.birthDate == nil || $0.gender == female }))
            list.append(("id in", #Predicate<UserRecord> { names.contains($0.id) }))
            list.append(("name contains", #Predicate<UserRecord> { $0.name.contains("o") }))
            list.append(("name prefix", #Predicate<UserRecord> { $0.name.starts(with: "Zo") }))
            list.append(("id prefix accented", #Predicate<UserRecord> { $0.id.starts(with: "É") }))
            list.append(("id order", #Predicate<UserRecord> { $0.id > "bob" }))
            list.append(("optional chain (in memory)", #Predicate<UserRecord> { ($0.bio?.count ?? 0) > 3 }))
        return list
    }()

    static let userSorts: [(String, [SortDescriptor<UserRecord>])] = [
        ("unsorted", []),
        ("birth date", [SortDescriptor(\.birthDate)]),
        ("birth date descending", [SortDescriptor(\.birthDate, order: .reverse)]),
        ("name", [SortDescriptor(\.name)]),
        ("name descending, then birth date", [SortDescriptor(\.name, order: .reverse), SortDescriptor(\.birthDate)]),
        ("name, lexical (in memory)", [SortDescriptor(\.name, comparator: .lexical)]),
        ("bio, lexical descending (in memory)", [SortDescriptor(\.bio, comparator: .lexical, order: .reverse)]),
    ]

    @Test("a sort with a string comparator runs in memory, where it differs from byte order")
    func comparatorSortInMemory() throws {
        // A decomposed é sorts by its bytes before "i", but lexically after it.
        let names = ["e\u{301}a", "item", "éb", "adam"]
        let records = names.enumerated().map { offset, name in
            UserRecord(id: "u\(offset)", name: name, bio: nil, email: nil, birthDate: nil, gender: nil)
        }
        try withDatabase { database in
            let storage = try database.storage(for: UserRecord.self)
            try storage.persist(records)
            let query = Query<UserRecord>(sortedBy: [SortDescriptor(\.name, comparator: .lexical)])
            let expected = try query.apply(to: records)
            #expect(try expected.map(\.id) != storage.read(Query(sortedBy: [SortDescriptor(\.name)])).map(\.id))
            #expect(try storage.read(query) == expected)
            #expect(try storage.queryPlan(query).pushedDown == false)
        }
    }

    @Test("users: optional fields, enums and string keys")
    func users() throws {
        let records = sampleUsers()
        try withDatabase { database in
            let storage = try database.storage(for: UserRecord.self)
            try storage.persist(records)
            for (name, predicate) in Self.userPredicates {
                for (sortName, sort) in Self.userSorts {
                    for limit in [nil, 2] {
                        let query = Query(where: predicate, sortedBy: sort, limit: limit)
                        #expect(try storage.read(query) == query.apply(to: records), "\(name), \(sortName), \(limit ?? -1)")
                    }
                }
                #expect(try storage.count(where: predicate) == Query(where: predicate).apply(to: records).count, "\(name)")
            }
        }
    }
}

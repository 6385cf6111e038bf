import DAOCore
import DialogGraph
import Foundation

// The helper's migration commands, for the kill -9 test of migrations:
//
//   crash-helper migrate         <backend> <dir> <seed> <count>  runs `crashMigrator`; "migrating", then "done 0"
//   crash-helper migrate-chapters <backend> <dir> <seed> <count>  runs `chapterMigrator`; "migrating", then "done 0"
//   crash-helper verify-migrated <backend> <dir> <seed> <count>  the state after <count> transactions, either
//                                                                 before the migration ("ok old") or after it ("ok new")

/// The example's migration, plus an identity retyping of the message text,
/// which makes every engine rewrite every message (SQLite rebuilds the table).
let crashMigrator: Migrator = {
    var migrator = Migrator()
    migrator.register(
        DialogGraphMigrations.reactionCount,
        [
            .addField("reactionCount", to: "messages", type: .integer, optional: false, default: .integer(0)),
            .changeField("text", in: "messages", to: .text, optional: false) { $0 },
        ])
    return migrator
}()

/// An identity retyping of every chapter's text: the migration reads and
/// rewrites every chapter, the records whose long texts lie on LMDB's
/// overflow pages.
let chapterMigrator: Migrator = {
    var migrator = Migrator()
    migrator.register("retype-chapter-text", [.changeField("text", in: "chapters", to: .text, optional: false) { $0 }])
    return migrator
}()

func migrateCommand(_ store: any Store, _ migrator: Migrator = crashMigrator) throws -> Int32 {
    guard let store = store as? any MigratableStore else {
        throw StorageError(.invalidArgument, .open, message: "the store cannot run migrations")
    }
    say("migrating")
    try migrator.migrate(store)
    say("done 0")
    return 0
}

func verifyMigratedCommand(_ store: any Store, seed: UInt64, count: Int) throws -> Int32 {
    guard let migratable = store as? any MigratableStore else {
        throw StorageError(.invalidArgument, .open, message: "the store cannot run migrations")
    }
    let expected = State(after: count, seed: seed)
    let applied = try Migrator.state(of: migratable).applied
    if applied.isEmpty {
        let (found, problems) = try Handles(store).state()
        if let problem = problems.first {
            say("wrong (old): \(problem)")
            return 20
        }
        guard found == expected else {
            say("wrong (old): \(describeDifference(found, expected))")
            return 20
        }
        say("ok old")
        return 0
    }
    guard applied == [DialogGraphMigrations.reactionCount] else {
        say("wrong: the store records the migrations \(applied)")
        return 20
    }
    var found = State()
    for author in try store.anyStorage(for: AuthorRecord.self).readAll() { found.authors[author.handle] = author.normalized }
    let translator = DialogTranslator()
    for record in try store.anyStorage(for: DialogRecordV2.self).readAll() {
        if let message = record.messages.first(where: { $0.reactionCount != 0 }) {
            say("wrong (new): message \(message.id) has reactionCount \(message.reactionCount)")
            return 20
        }
        let old = DialogRecord(
            id: record.id, isPinned: record.isPinned,
            messages: record.messages.map {
                MessageRecord(
                    id: $0.id, dialogId: $0.dialogId, date: $0.date, text: $0.text, senderId: $0.senderId,
                    receiverId: $0.receiverId, type: $0.type, isIncoming: $0.isIncoming, isRead: $0.isRead)
            })
        found.dialogs[record.id] = normalized(try translator.plain(from: old))
    }
    let messages = try store.anyStorage(for: MessageRecordV2.self).count()
    guard messages == expected.messages else {
        say("wrong (new): \(messages) messages stored on their own, \(expected.messages) expected")
        return 20
    }
    guard found == expected else {
        say("wrong (new): \(describeDifference(found, expected))")
        return 20
    }
    say("ok new")
    return 0
}

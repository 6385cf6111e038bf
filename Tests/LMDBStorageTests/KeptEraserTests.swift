import DAOCore
import Foundation
import Testing
import TestSupport

@testable import LMDBStorage

/// Erasing through the cursors a write call keeps: the `#id` eraser and the
/// cursor on the entity's database (``Codecs/runEraser``,
/// ``RangeKeyReader/cursor(in:)``), used for every parent whose children
/// one call erases, and, in a persist, between listings of the kept
/// parents' children through the same cursor. The tracker's three levels:
/// projects (String slugs, among them an empty one) own
/// issues (Int64 keys, children of their own: the general walk) own
/// comments (String keys, no stored index: the leaf walk). Comment keys of
/// 5, 6 and 7 characters (7, 8 and 9 bytes stored), interleaved across
/// issues, so that a run's last key of 8 bytes, compared as one word, meets
/// child keys of every length, and runs are short, so that the eraser both
/// finds the next run where its last delete left it and searches for it.
/// After every call: `verify()` of each level (a run left behind, or a run
/// whose children are gone, fails it), each level's count, every project
/// and every comment ever written read back against a model.
@Suite("LMDB erasure through the call's kept cursors")
struct KeptEraserTests {
    /// Project slugs: ASCII, non-ASCII, an empty one; none equal to another
    /// in NFC (the model's dictionary compares them as Swift does).
    static let slugs = ["core", "caf\u{E9}", "", "\u{6570}\u{636E}", "z-last", "Zeta", "a b", "\u{1F41B}-bugs", "\u{C5}ngstr\u{F6}m"]

    struct Model {
        var projects: [String: ProjectRecord] = [:]

        var issues: [IssueRecord] { projects.values.flatMap(\.issues) }
        var comments: [CommentRecord] { issues.flatMap(\.comments) }

        /// `project` as the store reads it back: issues and comments in key order.
        static func sorted(_ project: ProjectRecord) -> ProjectRecord {
            var project = project
            project.issues.sort { $0.id < $1.id }
            for index in project.issues.indices {
                project.issues[index].comments.sort { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
            }
            return project
        }
    }

    struct Generator {
        var random: TestRandom
        var usedIssues: Set<Int64> = []
        var usedComments: Set<String> = []

        /// A comment key not used before: 5 to 7 digits, so keys of the
        /// three lengths interleave in key order.
        mutating func commentId() -> String {
            while true {
                let width = 5 + random.below(3)
                let digits = String(random.below(100_000))
                let id = String(repeating: "0", count: max(0, width - digits.count)) + digits
                if usedComments.insert(id).inserted { return id }
            }
        }

        mutating func issueId() -> Int64 {
            while true {
                let id = Int64(random.below(5_000)) - 2_500
                if usedIssues.insert(id).inserted { return id }
            }
        }

        mutating func comment(issue: Int64, _ n: Int) -> CommentRecord {
            CommentTranslator().record(
                from: TrackedComment(
                    uniqueId: commentId(), issueId: issue, author: random.pick(Tracker.people), body: "b\(n)",
                    postedAt: Tracker.time(n % 5), editedAt: n % 3 == 0 ? nil : Tracker.time(n),
                    payload: Data([UInt8(truncatingIfNeeded: n)])))
        }

        mutating func issue(project: String, _ n: Int) -> IssueRecord {
            let id = issueId()
            let comments = (0..<random.below(9)).map { comment(issue: id, n + $0) }
            let assignee: String? = n % 2 == 0 ? nil : random.pick(Tracker.people)
            var record = IssueTranslator().record(
                from: TrackedIssue(
                    uniqueId: id, projectSlug: project, title: "i\(n)", state: random.pick(IssueState.allCases),
                    assignee: assignee, due: nil, priority: Int32(n % 4), updatedAt: Tracker.time(n % 7),
                    comments: []))
            record.comments = comments
            return record
        }

        mutating func project(_ slug: String, _ n: Int) -> ProjectRecord {
            let archived = random.below(3) == 0
            var record = ProjectTranslator().record(
                from: Project(uniqueId: slug, title: "p\(n)", archived: archived, createdAt: Tracker.time(n), issues: []))
            record.issues = (0..<random.below(5)).map { issue(project: slug, n * 10 + $0) }
            return record
        }

        /// `project` rewritten: some issues dropped, some kept with their
        /// comments partly dropped and new ones added, some new issues.
        mutating func rewrite(_ project: ProjectRecord, _ n: Int) -> ProjectRecord {
            var project = project
            project.title = "p\(n)"
            project.issues = project.issues.compactMap { issue -> IssueRecord? in
                guard random.below(3) != 0 else { return nil }
                var issue = issue
                issue.comments = issue.comments.filter { _ in random.below(3) != 0 }
                issue.comments += (0..<random.below(3)).map { comment(issue: issue.id, n + $0) }
                return issue
            }
            project.issues += (0..<random.below(3)).map { issue(project: project.slug, n * 10 + $0) }
            return project
        }
    }

    @Test("erasing a mix of parents in one call, rewriting and erasing by key and by predicate agree with a model", arguments: [UInt64(7), 8, 9])
    func model(seed: UInt64) throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let projects = try env.storage(for: ProjectRecord.self)
            let issues = try env.storage(for: IssueRecord.self)
            let comments = try env.storage(for: CommentRecord.self)
            var generator = Generator(random: TestRandom(seed: seed))
            var model = Model()
            var everyComment: Set<String> = []
            var everyIssue: Set<Int64> = []

            func expectStore(_ step: Int) throws {
                let comment = Comment(rawValue: "seed \(seed), call \(step)")
                #expect(try projects.verify() == model.projects.count, comment)
                #expect(try issues.verify() == model.issues.count, comment)
                #expect(try comments.verify() == model.comments.count, comment)
                #expect(try comments.count(where: nil) == model.comments.count, comment)
                for slug in Self.slugs {
                    #expect(try projects.read(primaryKey: slug) == model.projects[slug].map(Model.sorted), comment)
                }
                let stored = Dictionary(uniqueKeysWithValues: model.comments.map { ($0.id, $0) })
                for id in everyComment { #expect(try comments.read(primaryKey: id) == stored[id], comment) }
                let storedIssues = Set(model.issues.map(\.id))
                for id in everyIssue {
                    #expect(try issues.read(primaryKey: id)?.id == (storedIssues.contains(id) ? id : nil), comment)
                }
            }

            func note(_ records: [ProjectRecord]) {
                for record in records {
                    everyIssue.formUnion(record.issues.map(\.id))
                    everyComment.formUnion(record.issues.flatMap(\.comments).map(\.id))
                }
            }

            for step in 0..<40 {
                switch generator.random.below(6) {
                case 0, 1:
                    // New projects and rewrites of stored ones in one call:
                    // dropped issues' comments are erased between listings
                    // of kept issues' comments.
                    var batch: [String: ProjectRecord] = [:]
                    for _ in 0..<(1 + generator.random.below(4)) {
                        let slug = generator.random.pick(Self.slugs)
                        if let stored = batch[slug] ?? model.projects[slug] {
                            batch[slug] = generator.rewrite(stored, step)
                        } else {
                            batch[slug] = generator.project(slug, step)
                        }
                    }
                    let records = Array(batch.values)
                    try projects.persist(records)
                    note(records)
                    for record in records { model.projects[record.slug] = record }
                case 2, 3:
                    // Several projects at once, out of key order, with a
                    // repeated and a missing key.
                    var keys = (0..<(1 + generator.random.below(5))).map { _ in generator.random.pick(Self.slugs) }
                    if let first = keys.first { keys.append(first) }
                    let expected = Set(keys).filter { model.projects[$0] != nil }.count
                    #expect(try projects.erase(primaryKeys: keys) == expected)
                    for key in keys { model.projects[key] = nil }
                case 4:
                    // Issues by their own storage, with a missing key.
                    let stored = model.issues.map(\.id)
                    var keys = (0..<generator.random.below(4)).compactMap { _ in stored.isEmpty ? nil : generator.random.pick(stored) }
                    keys.append(99_999)
                    let expected = Set(keys).intersection(stored).count
                    #expect(try issues.erase(primaryKeys: keys) == expected)
                    for slug in model.projects.keys {
                        model.projects[slug]?.issues.removeAll { keys.contains($0.id) }
                    }
                default:
                    let archived = model.projects.values.filter(\.archived).count
                    #expect(try projects.erase(where: #Predicate { $0.archived }) == archived)
                    model.projects = model.projects.filter { !$0.value.archived }
                }
                try expectStore(step)
            }
            #expect(try projects.erase(primaryKeys: Array(model.projects.keys)) == model.projects.count)
            model.projects = [:]
            try expectStore(40)
            #expect(try comments.count(where: nil) == 0)
        }
    }
}

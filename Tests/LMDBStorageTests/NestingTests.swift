import DAOCore
import Foundation
import Testing

@testable import LMDBStorage

struct ForumRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var name: String
    var threads: [ThreadRecord]

    static let entity = Entity<ForumRecord>(
        "forums", primaryKey: "id", \.id, fields: [Field("name", \.name)],
        relations: [Relation("threads", \.threads, foreignKey: "forumId", \ThreadRecord.forumId)])
}

struct ThreadRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var forumId: Int64
    var title: String
    var posts: [PostRecord]

    static let entity = Entity<ThreadRecord>(
        "threads", primaryKey: "id", \.id, fields: [Field("forumId", \.forumId), Field("title", \.title)],
        relations: [Relation("posts", \.posts, foreignKey: "threadId", \PostRecord.threadId)],
        ownedBy: ForumRecord.self)
}

struct PostRecord: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var threadId: Int64
    var body: String

    static let entity = Entity<PostRecord>(
        "posts", primaryKey: "id", \.id, fields: [Field("threadId", \.threadId), Field("body", \.body)],
        indexes: [Index("posts_by_body", on: ["body"])],
        ownedBy: ThreadRecord.self)
}

@Suite("LMDB nesting: grandchildren keyed under children")
struct NestingTests {
    func forums() -> [ForumRecord] {
        (1...3).map { forum in
            ForumRecord(
                id: Int64(forum), name: "forum \(forum)",
                threads: (1...3).map { thread in
                    let threadId = Int64(forum * 10 + thread)
                    return ThreadRecord(
                        id: threadId, forumId: Int64(forum), title: "thread \(threadId)",
                        posts: (1...2).map { post in
                            PostRecord(id: "p\(threadId)-\(post)", threadId: threadId, body: post == 1 ? "first" : "reply \(threadId)")
                        })
                })
        }
    }

    @Test("three levels round-trip, move, refuse orphans and erase without leftovers")
    func threeLevels() throws {
        try withTemporaryDirectory { directory in
            var records = forums()
            let env = try LMDBEnvironment(directory: directory.store)
            // The grandchild's storage first: it sets up its owners.
            let posts = try env.storage(for: PostRecord.self)
            let forumStorage = try env.storage(for: ForumRecord.self)
            try forumStorage.persist(records)
            #expect(try forumStorage.readAll() == records)
            #expect(try posts.count() == 18)
            #expect(try posts.read(where: #Predicate { $0.body == "first" }).count == 9)
            #expect(try posts.read(where: #Predicate { $0.threadId == 22 }) == records[1].threads[1].posts)

            var moved = records[0].threads[0].posts[1]
            moved.threadId = 33
            try posts.persist(moved)
            records[0].threads[0].posts.removeLast()
            records[2].threads[2].posts.insert(moved, at: 0)  // children come in key order
            #expect(try forumStorage.readAll() == records)

            let orphan = PostRecord(id: "x", threadId: 999, body: "lost")
            #expect(storageError { try posts.persist(orphan) }?.kind == .constraint)

            #expect(try forumStorage.erase(primaryKeys: [1, 3]) == 2)
            let counts = try env.entryCounts()
            #expect(counts["threads"] == 3)
            #expect(counts["threads#id"] == 3)
            #expect(counts["posts"] == 6)
            #expect(counts["posts#id"] == 6)
            #expect(counts["posts#posts_by_body"] == 6)
            #expect(try forumStorage.eraseAll() == 1)
            #expect(try env.entryCounts().filter { !$0.key.hasPrefix("__") }.values.allSatisfy { $0 == 0 })
        }
    }
}

import DAOCore
import Foundation
import Testing
import TestSupport

// Contracts every backend keeps, once for all of them: three levels of nesting,
// relations that loop, undeclared Codable keys, children whose entity does not
// name its owner (TreeRecord and LeafRecord, from TestSupport).

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

/// A comment that owns its replies, which are comments too: a relation loop.
struct LoopingCommentRecord: Record {
    typealias PrimaryKey = Int64
    var id: Int64
    var parentId: Int64
    var replies: [LoopingCommentRecord]

    static let entity = Entity<LoopingCommentRecord>(
        "comments", primaryKey: "id", \.id, fields: [Field("parentId", \.parentId)],
        relations: [Relation("replies", \.replies, foreignKey: "parentId", \LoopingCommentRecord.parentId)])
}

/// A record whose `Codable` shape has a key its entity does not declare.
struct ExtraKeyRecord: Record {
    typealias PrimaryKey = Int64
    var id: Int64
    var name: String
    var extra: Int64

    static let entity = Entity<ExtraKeyRecord>("extra_key", primaryKey: "id", \.id, fields: [Field("name", \.name)])
}

@Suite("Conformance: shared contracts")
struct ContractTests {
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

    @Test("three levels round-trip, move, refuse orphans and erase without leftovers", arguments: allBackends)
    func threeLevels(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            var records = forums()
            // The grandchild's storage first: it sets up its owners.
            let posts = try store.anyStorage(for: PostRecord.self)
            let forumStorage = try store.anyStorage(for: ForumRecord.self)
            let threads = try store.anyStorage(for: ThreadRecord.self)
            try forumStorage.persist(records)
            #expect(identical(try forumStorage.readAll(), records))
            #expect(try posts.count() == 18)
            #expect(try posts.read(where: #Predicate { $0.body == "first" }).count == 9)
            #expect(identical(try posts.read(where: #Predicate { $0.threadId == 22 }), records[1].threads[1].posts))

            var moved = records[0].threads[0].posts[1]
            moved.threadId = 33
            try posts.persist(moved)
            records[0].threads[0].posts.removeLast()
            records[2].threads[2].posts.insert(moved, at: 0)  // children come in key order
            #expect(identical(try forumStorage.readAll(), records))

            let orphan = PostRecord(id: "x", threadId: 999, body: "lost")
            #expect { try posts.persist(orphan) } throws: { ($0 as? StorageError)?.kind == .constraint }

            #expect(try forumStorage.erase(primaryKeys: [1, 3]) == 2)
            #expect(try threads.count() == 3)
            #expect(try posts.count() == 6)
            #expect(try posts.count(where: #Predicate { $0.body == "first" }) == 3)
            #expect(try forumStorage.eraseAll() == 1)
            #expect(try threads.count() == 0)
            #expect(try posts.count() == 0)
        }
    }

    @Test("relations that loop back to an entity are a schema mismatch, not endless recursion", arguments: allBackends)
    func relationLoop(backend: TestBackend) throws {
        _ = try withStore(backend) { store, _ in
            #expect {
                _ = try store.anyStorage(for: LoopingCommentRecord.self)
            } throws: { error in
                guard let error = error as? StorageError else { return false }
                return error.kind == .schemaMismatch && error.entity == "comments"
            }
        }
    }

    @Test("an undeclared Codable key is a schema mismatch, and nothing is stored", arguments: allBackends)
    func undeclaredKey(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let storage = try store.anyStorage(for: ExtraKeyRecord.self)
            #expect {
                try storage.persist(ExtraKeyRecord(id: 1, name: "a", extra: 2))
            } throws: { error in
                guard let error = error as? StorageError else { return false }
                return error.kind == .schemaMismatch && error.message.contains("extra")
            }
            #expect(try storage.count() == 0)
        }
    }

    @Test("children whose entity does not name its owner behave as owned children", arguments: allBackends)
    func childrenWithoutOwnedBy(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let trees = try store.anyStorage(for: TreeRecord.self)
            let leaves = try store.anyStorage(for: LeafRecord.self)
            let forest = [
                TreeRecord(id: 1, leaves: [LeafRecord(id: 2, treeId: 1, label: "b"), LeafRecord(id: 1, treeId: 1, label: "a")]),
                TreeRecord(id: 2, leaves: [LeafRecord(id: 3, treeId: 2, label: "c")]),
            ]
            try trees.persist(forest)
            let read = try trees.readAll()
            #expect(read.map { $0.leaves.map(\.id) } == [[1, 2], [3]])
            #expect(try leaves.count(where: #Predicate { $0.treeId == 1 }) == 2)
            try trees.persist(TreeRecord(id: 1, leaves: [LeafRecord(id: 1, treeId: 1, label: "a")]))
            #expect(try leaves.count() == 2)
            #expect(try trees.erase(primaryKeys: [2]) == 1)
            #expect(try leaves.readAll().map(\.id) == [1])
        }
    }
}

import DAOCore
import DAOMacros
import Foundation
import PostgresNIO
import Testing

@testable import PostgresStorage

// A child table's foreign key gets an index of its own only when no declared
// index starts with its column (a declared index on (topicId, at) finds a
// topic's posts as well), and migrations keep it so: dropping the declared
// index that served it creates it, adding one that serves it drops it. The
// writes that find children through either index (the deletion of the
// children a parent no longer holds, the cascade of an erasure) store what
// the model says.

@StoredRecord("fx_topics")
struct FxTopic: Equatable {
    var id: Int64
    var title: String
    @Children(foreignKey: "topicId") var posts: [FxPost]
    @Children(foreignKey: "topicId") var tags: [FxTag]
}

@StoredRecord("fx_posts", indexes: [Index("fx_posts_by_topic_at", on: ["topicId", "at"])], ownedBy: FxTopic.self)
struct FxPost: Equatable {
    var id: Int64
    var topicId: Int64
    var at: Double
    var body: String
}

@StoredRecord("fx_tags", primaryKey: "name", ownedBy: FxTopic.self)
struct FxTag: Equatable {
    var name: String
    var topicId: Int64
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct ForeignKeyIndexTests {
    /// The names of the indexes of `table` in `schema`.
    func indexes(_ schema: String, _ table: String) throws -> Set<String> {
        try Server.rawSession { connection in
            var names = Set<String>()
            for row in try connection.query(
                PostgresQuery(
                    unsafeSQL: "SELECT indexname::text FROM pg_indexes WHERE schemaname = '\(schema)' AND tablename = '\(table)'"),
                logger: Server.logger
            ).wait() {
                names.insert(try row.decode(String.self))
            }
            return names
        }
    }

    func topic(_ id: Int64, posts: [Int64], tags: [String]) -> FxTopic {
        FxTopic(
            id: id, title: "topic \(id)",
            posts: posts.map { FxPost(id: $0, topicId: id, at: Double($0) / 4, body: "post \($0) \u{0}") },
            tags: tags.map { FxTag(name: $0, topicId: id) })
    }

    @Test func aDeclaredIndexLeadingWithTheForeignKeyServesIt() throws {
        try Server.withStore { database, schema in
            _ = try database.storage(for: FxTopic.self)
            #expect(
                try indexes(schema, "fx_posts") == ["fx_posts_pkey", "_dao_ix_fx_posts_fx_posts_by_topic_at"],
                "the posts' foreign key got an index beside the declared one that starts with it")
            #expect(try indexes(schema, "fx_tags") == ["fx_tags_pkey", "_dao_fk_fx_tags_topicId"])
        }
    }

    @Test func writesReplaceAndMoveChildrenThroughEitherIndex() throws {
        try Server.withStore { database, _ in
            let topics = try database.storage(for: FxTopic.self)
            try topics.persist([
                topic(1, posts: [1, 2, 3], tags: ["a", "b", "c\u{0}"]),
                topic(2, posts: [4, 5], tags: ["d"]),
                topic(3, posts: [6], tags: []),
            ])
            // Topic 1 drops post 2 and tag "b", takes post 4 and tag "d" from
            // topic 2 (which it is written before); topic 2 keeps post 5 only;
            // topic 3 is not written and keeps what it holds.
            let second = [
                topic(1, posts: [1, 3, 4], tags: ["a", "c\u{0}", "d"]),
                topic(2, posts: [5], tags: []),
            ]
            try topics.persist(second)
            let read = try topics.read(sortedBy: [SortDescriptor(\.id)])
            #expect(read == second + [topic(3, posts: [6], tags: [])])
            #expect(try database.storage(for: FxPost.self).count() == 5)
            #expect(try database.storage(for: FxTag.self).count() == 3)

            // The erasure's cascade finds the children through both indexes.
            #expect(try topics.erase(primaryKeys: [1]) == 1)
            #expect(try topics.read(sortedBy: [SortDescriptor(\.id)]) == [topic(2, posts: [5], tags: []), topic(3, posts: [6], tags: [])])
            #expect(try database.storage(for: FxPost.self).count() == 2)
            #expect(try database.storage(for: FxTag.self).count() == 0)
        }
    }

    @Test func migrationsKeepTheForeignKeyIndexedOnce() throws {
        try Server.withStore { database, schema in
            try database.storage(for: FxTopic.self).persist([topic(1, posts: [1, 2], tags: ["a"])])
            try database.close()

            var migrator = Migrator()
            migrator.register("without the declared index", [.dropIndex("fx_posts_by_topic_at", from: "fx_posts")])
            let second = try PostgresStore(try Server.configuration(schema))
            #expect(try migrator.migrate(second) == ["without the declared index"])
            try second.close()
            #expect(
                try indexes(schema, "fx_posts") == ["fx_posts_pkey", "_dao_fk_fx_posts_topicId"],
                "dropping the index that served the foreign key left it without one")

            migrator.register("by topic and body", [.addIndex("fx_posts_by_topic_body", on: ["topicId", "body"], to: "fx_posts")])
            let third = try PostgresStore(try Server.configuration(schema))
            #expect(try migrator.migrate(third) == ["by topic and body"])
            try third.close()
            #expect(try indexes(schema, "fx_posts") == ["fx_posts_pkey", "_dao_ix_fx_posts_fx_posts_by_topic_body"])
            #expect(try indexes(schema, "fx_tags") == ["fx_tags_pkey", "_dao_fk_fx_tags_topicId"])
        }
    }
}

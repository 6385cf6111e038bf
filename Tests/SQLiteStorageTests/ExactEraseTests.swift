import DAOCore
import Foundation
@testable import SQLiteStorage
import Testing

/// Three levels with text keys whose children and grandchildren have a
/// `name` column as their parent has, and the children a `note` as well:
/// a parent's condition sits inside each level's `DELETE`, where a bare
/// column name must still be the parent's.
struct TaggedParent: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var note: String?
    var kids: [TaggedChild]

    static let entity = Entity<TaggedParent>(
        "tagged_parents", primaryKey: "id", \.id, fields: [Field("name", \.name), Field("note", \.note)],
        relations: [Relation("kids", \.kids, foreignKey: "parentId", \TaggedChild.parentId)])
}

struct TaggedChild: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var parentId: String
    var name: String
    var note: String?
    var grandchildren: [TaggedGrandchild]

    static let entity = Entity<TaggedChild>(
        "tagged_children", primaryKey: "id", \.id,
        fields: [Field("parentId", \.parentId), Field("name", \.name), Field("note", \.note)],
        relations: [Relation("grandchildren", \.grandchildren, foreignKey: "childId", \TaggedGrandchild.childId)],
        ownedBy: TaggedParent.self)
}

struct TaggedGrandchild: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var childId: String
    var name: String

    static let entity = Entity<TaggedGrandchild>(
        "tagged_grandchildren", primaryKey: "id", \.id, fields: [Field("childId", \.childId), Field("name", \.name)],
        ownedBy: TaggedChild.self)
}

@Suite("SQLite: an exact erase(where:) over text keys, optionals and column names the children share")
struct ExactEraseTests {
    /// Parent `p` named `p`, with one child (and grandchild) named after each
    /// other parent, and a note on the children exactly when the parent has none.
    static func parent(_ p: String, note: String?) -> TaggedParent {
        TaggedParent(id: p, name: p, note: note, kids: ["a", "b", "c", "ab"].filter { $0 != p }.map { other in
            TaggedChild(
                id: "\(p)-\(other)", parentId: p, name: other, note: note == nil ? "x" : nil,
                grandchildren: [TaggedGrandchild(id: "\(p)-\(other)-g", childId: "\(p)-\(other)", name: other)])
        })
    }

    /// A store with parents a (no note), b ("n"), c (no note) and ab ("m").
    func withParents(
        _ body: (SQLiteDatabase, SQLiteRecordStorage<TaggedParent>, SQLiteRecordStorage<TaggedChild>, SQLiteRecordStorage<TaggedGrandchild>) throws -> Void
    ) throws {
        try withDatabase { database in
            let parents = try database.storage(for: TaggedParent.self)
            try parents.persist([
                Self.parent("a", note: nil), Self.parent("b", note: "n"), Self.parent("c", note: nil), Self.parent("ab", note: "m"),
            ])
            try body(database, parents, database.storage(for: TaggedChild.self), database.storage(for: TaggedGrandchild.self))
        }
    }

    /// Every level holds exactly what the parents `left` hold.
    func expectOnly(
        _ left: [String], _ parents: SQLiteRecordStorage<TaggedParent>, _ children: SQLiteRecordStorage<TaggedChild>,
        _ grandchildren: SQLiteRecordStorage<TaggedGrandchild>
    ) throws {
        #expect(try parents.readAll().map(\.id) == left.sorted())
        #expect(try children.readAll().map(\.id) == left.flatMap { Self.parent($0, note: nil).kids.map(\.id) }.sorted())
        #expect(try grandchildren.count() == left.count * 3)
        #expect(Set(try grandchildren.readAll().map { String($0.childId.prefix { $0 != "-" }) }) == Set(left))
    }

    enum Condition: String, CaseIterable, Sendable {
        case nameEquals, noteIsNil, noteNotEqual, prefixAndNotEqual, keyIn
    }

    /// Erases the parents that meet `condition`; returns how many, and the parents left.
    func erase(_ condition: Condition, _ parents: SQLiteRecordStorage<TaggedParent>) throws -> (Int, [String]) {
        switch condition {
        case .nameEquals:
            let name = "c"
            return (try parents.erase(where: #Predicate { $0.name == name }), ["a", "ab", "b"])
        case .noteIsNil:
            return (try parents.erase(where: #Predicate { $0.note == nil }), ["ab", "b"])
        case .noteNotEqual:
            // An optional compared with `!=` holds for nil as well.
            return (try parents.erase(where: #Predicate { $0.note != "n" }), ["b"])
        case .prefixAndNotEqual:
            return (try parents.erase(where: #Predicate { $0.name.starts(with: "a") && $0.id != "ab" }), ["ab", "b", "c"])
        case .keyIn:
            let keys = ["ab", "zz", "c"]
            return (try parents.erase(where: #Predicate { keys.contains($0.id) }), ["a", "b"])
        }
    }

    @Test("the parents meeting the condition go with their children and grandchildren, and nothing else", arguments: Condition.allCases)
    func erasesWhatMatches(_ condition: Condition) throws {
        try withParents { database, parents, children, grandchildren in
            let (erased, left) = try erase(condition, parents)
            #expect(erased == 4 - left.count)
            try expectOnly(left, parents, children, grandchildren)
            // The children's and grandchildren's deletes ran, selecting the
            // parents by the condition.
            let nested = "DELETE FROM \"tagged_grandchildren\" WHERE \"childId\" IN (SELECT"
            #expect(try EraseAllTests.steps(database, startingWith: nested) != nil)
        }
    }

    @Test("an exact erase(where:) from the middle level takes the grandchildren of the children it matches only")
    func middleLevel() throws {
        try withParents { _, parents, children, grandchildren in
            // A child named "b" under each of a, c and ab.
            let erased = try children.erase(where: #Predicate { $0.name == "b" })
            #expect(erased == 3)
            #expect(try grandchildren.count() == 9)
            #expect(try grandchildren.readAll().allSatisfy { $0.name != "b" })
            #expect(try parents.readAll().map { $0.kids.count } == [2, 2, 3, 2])
        }
    }
}

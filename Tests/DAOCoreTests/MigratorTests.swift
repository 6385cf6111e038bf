import DAOCore
import Foundation
import Testing

/// A store held in memory that only runs migrations: schemas, rows and
/// metadata in dictionaries, a transaction as a copy kept on success.
final class MemoryMigrationStore: MigratableStore, @unchecked Sendable {
    final class Transaction: MigrationTransaction {
        var schemas: [String: EntitySchema]
        var rowsByEntity: [String: [[StoredValue]]]
        var metadataByKey: [String: [UInt8]]

        init(_ store: MemoryMigrationStore) {
            schemas = store.schemas
            rowsByEntity = store.rows
            metadataByKey = store.metadata
        }

        func recordedSchemas() throws -> [String: EntitySchema] { schemas }
        func metadata(_ key: String) throws -> [UInt8]? { metadataByKey[key] }
        func setMetadata(_ key: String, _ value: [UInt8]) throws { metadataByKey[key] = value }
        func rows(of schema: EntitySchema, in schemas: [String: EntitySchema]) throws -> [[StoredValue]] {
            rowsByEntity[schema.entity] ?? []
        }
        func rewrite(
            from old: EntitySchema?, to new: EntitySchema, rows: [[StoredValue]], in schemas: [String: EntitySchema]
        ) throws {
            if let old, old.entity != new.entity {
                rowsByEntity[old.entity] = nil
                self.schemas[old.entity] = nil
            }
            rowsByEntity[new.entity] = rows
            self.schemas[new.entity] = new
        }
        func record(_ schema: EntitySchema) throws { schemas[schema.entity] = schema }
        func drop(_ schema: EntitySchema, in schemas: [String: EntitySchema]) throws {
            rowsByEntity[schema.entity] = nil
            self.schemas[schema.entity] = nil
        }
    }

    var schemas: [String: EntitySchema] = [:]
    var rows: [String: [[StoredValue]]] = [:]
    var metadata: [String: [UInt8]] = [:]

    let location = URL(fileURLWithPath: "/dev/null")
    func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R> {
        throw StorageError(.invalidArgument, .open, message: "a migration-only store")
    }
    func close() throws {}

    func withMigrationTransaction<T>(_ body: (any MigrationTransaction) throws -> T) throws -> T {
        let txn = Transaction(self)
        let result = try body(txn)
        schemas = txn.schemas
        rows = txn.rowsByEntity
        metadata = txn.metadataByKey
        return result
    }
}

@Suite("Migrator: what a step refuses, before any engine is involved")
struct MigratorTests {
    typealias FieldSchema = EntitySchema.FieldSchema

    /// `parents (id, name, score?)` indexed on `name`, owning `children (id, parentId, note?)`.
    func store() -> MemoryMigrationStore {
        let store = MemoryMigrationStore()
        store.schemas["parents"] = EntitySchema(
            entity: "parents",
            fields: [
                FieldSchema(name: "id", type: .text, optional: false), FieldSchema(name: "name", type: .text, optional: false),
                FieldSchema(name: "score", type: .real, optional: true),
            ],
            indexes: [EntitySchema.IndexSchema(name: "parents_by_name", fields: ["name"])],
            relations: [EntitySchema.RelationSchema(name: "children", child: "children", foreignKey: "parentId")])
        store.schemas["children"] = EntitySchema(
            entity: "children",
            fields: [
                FieldSchema(name: "id", type: .integer, optional: false),
                FieldSchema(name: "parentId", type: .text, optional: false),
                FieldSchema(name: "note", type: .text, optional: true),
            ],
            owner: "parents")
        store.rows["parents"] = [[.text("p1"), .text("one"), .null], [.text("p2"), .text("two"), .real(0.5)]]
        store.rows["children"] = [[.integer(1), .text("p1"), .null], [.integer(2), .text("p1"), .text("x")]]
        return store
    }

    func refusal(_ steps: [MigrationStep], sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let store = store()
        let before = (store.schemas, store.rows)
        var migrator = Migrator()
        migrator.register("v2", steps)
        do {
            try migrator.migrate(store)
            Issue.record("the migration was not refused", sourceLocation: sourceLocation)
            return nil
        } catch let error as StorageError {
            #expect(error.kind == .schemaMismatch, sourceLocation: sourceLocation)
            #expect(store.schemas == before.0 && store.rows == before.1, sourceLocation: sourceLocation)
            #expect(store.metadata.isEmpty, sourceLocation: sourceLocation)
            return error.message
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    @Test("steps that do not fit the stored schema are refused with a reason, and nothing changes")
    func refusals() {
        #expect(refusal([.dropField("id", from: "parents")])?.contains("primary key") == true)
        #expect(refusal([.dropField("name", from: "parents")])?.contains("drop the index first") == true)
        #expect(refusal([.dropField("parentId", from: "children")])?.contains("foreign key") == true)
        #expect(refusal([.dropField("nope", from: "parents")])?.contains("no field 'nope'") == true)
        #expect(refusal([.addField("name", to: "parents", type: .text, optional: true)])?.contains("already") == true)
        #expect(refusal([.addField("children", to: "parents", type: .text, optional: true)])?.contains("already") == true)
        #expect(refusal([.addField("n", to: "parents", type: .integer, optional: false)])?.contains("does not fit") == true)
        #expect(refusal([.renameField("name", to: "score", in: "parents")])?.contains("already") == true)
        #expect(refusal([.renameEntity("parents", to: "children")])?.contains("already") == true)
        #expect(refusal([.addIndex("parents_by_name", on: ["name"], to: "parents")])?.contains("already") == true)
        #expect(refusal([.addIndex("i", on: ["nope"], to: "parents")])?.contains("no field 'nope'") == true)
        #expect(refusal([.dropIndex("nope", from: "parents")])?.contains("no index 'nope'") == true)
        #expect(refusal([.addField("x", to: "ghosts", type: .text, optional: true)])?.contains("no entity 'ghosts'") == true)
        #expect(refusal([.changeField("id", in: "children", to: .text, optional: false) { $0 }])?.contains("primary key") == true)
        // The general step must store every entity of the tree it reads.
        #expect(refusal([.rewrite("parents", to: LoneParent.self) { _ in }])?.contains("does not store 'children'") == true)
        // A row that lacks a non-optional field of the new shape.
        #expect(
            refusal([.rewrite("children", to: LoneChild.self) { row in row.values["parentId"] = nil }])?
                .contains("does not fit") == true)
        // A later step's failure undoes the earlier ones of the same migration.
        #expect(
            refusal([.renameEntity("parents", to: "owners"), .dropField("id", from: "owners")])?.contains("primary key")
                == true)
    }

    @Test("a migration writes NaN and -0.0 as given")
    func nanAndNegativeZero() throws {
        for value in [Double.nan, -0.0, -Double.nan] {
            let store = store()
            var migrator = Migrator()
            migrator.register("v2", [.changeField("score", in: "parents", to: .real, optional: true) { _ in .real(value) }])
            #expect(try migrator.migrate(store) == ["v2"])
            let position = store.schemas["parents"]?.fields.firstIndex { $0.name == "score" }
            let scores = store.rows["parents"]?.map { row -> UInt64? in
                guard let position, position < row.count, case .real(let real) = row[position] else { return nil }
                return real.bitPattern
            }
            #expect(scores?.isEmpty == false)
            #expect(scores?.allSatisfy { $0 == value.bitPattern } == true)
        }
    }

    @Test("renaming an owner, its foreign key and a field updates the related schemas and indexes")
    func relatedSchemasFollow() throws {
        let store = store()
        var migrator = Migrator()
        migrator.register(
            "v2",
            [
                .renameField("parentId", to: "owner", in: "children"), .renameField("name", to: "label", in: "parents"),
                .renameEntity("parents", to: "owners"),
            ])
        #expect(try migrator.migrate(store) == ["v2"])
        #expect(store.schemas["parents"] == nil)
        #expect(store.schemas["owners"]?.relations == [.init(name: "children", child: "children", foreignKey: "owner")])
        #expect(store.schemas["owners"]?.indexes == [.init(name: "parents_by_name", fields: ["label"])])
        #expect(store.schemas["children"]?.owner == "owners")
        #expect(store.rows["owners"]?.count == 2)
        #expect(try Migrator.state(of: store) == MigrationState(applied: ["v2"]))
    }

    @Test("dropping a relation erases its child entity; the parent's records stay")
    func dropRelation() throws {
        #expect(refusal([.dropRelation("nope", from: "parents")])?.contains("no relation 'nope'") == true)
        let store = store()
        var migrator = Migrator()
        migrator.register("v2", [.dropRelation("children", from: "parents")])
        #expect(try migrator.migrate(store) == ["v2"])
        #expect(store.schemas["parents"]?.relations == [])
        #expect(store.schemas["children"] == nil && store.rows["children"] == nil)
        #expect(store.rows["parents"]?.count == 2)
    }

    /// The store with a second holder of `children`: `others.kids`, as a
    /// store written before the one-holder rule may record.
    func storeWithTwoHolders() -> MemoryMigrationStore {
        let store = store()
        store.schemas["others"] = EntitySchema(
            entity: "others", fields: [FieldSchema(name: "id", type: .text, optional: false)],
            relations: [EntitySchema.RelationSchema(name: "kids", child: "children", foreignKey: "parentId")])
        store.rows["others"] = [[.text("o1")]]
        return store
    }

    @Test("a store recording two holders of one child is repaired by dropping the other holder's relation")
    func repairTwoHolders() throws {
        let children = store().rows["children"]
        // The owner the child names cannot be the one dropped.
        let refused = storeWithTwoHolders()
        var wrong = Migrator()
        wrong.register("v2", [.dropRelation("children", from: "parents")])
        let error = #expect(throws: StorageError.self) { try wrong.migrate(refused) }
        #expect(error?.message.contains("drop that relation instead") == true)
        #expect(refused.rows["children"] == children && refused.metadata.isEmpty)

        let store = storeWithTwoHolders()
        let parents = try #require(store.schemas["parents"])
        #expect(throws: StorageError.self) { try ChildHolders.check(declared: [parents], recorded: store.schemas.values) }
        var migrator = Migrator()
        migrator.register("v2", [.dropRelation("kids", from: "others")])
        #expect(try migrator.migrate(store) == ["v2"])
        #expect(store.schemas["others"]?.relations == [])
        #expect(store.rows["others"]?.count == 1)
        // The children stay with the holder that remains, which opens again.
        #expect(store.rows["children"] == children)
        #expect(store.schemas["children"]?.owner == "parents")
        try ChildHolders.check(declared: [parents], recorded: store.schemas.values)
    }
}

/// `parents` without its relation to `children`.
struct LoneParent: Record {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var score: Double?

    static let entity = Entity<LoneParent>(
        "parents", primaryKey: "id", \.id, fields: [Field("name", \.name), Field("score", \.score)],
        indexes: [Index("parents_by_name", on: ["name"])])
}

/// `children` as a top-level entity with a non-optional `parentId`.
struct LoneChild: Record {
    typealias PrimaryKey = Int64
    var id: Int64
    var parentId: String
    var note: String?

    static let entity = Entity<LoneChild>(
        "children", primaryKey: "id", \.id, fields: [Field("parentId", \.parentId), Field("note", \.note)])
}

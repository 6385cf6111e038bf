/// The one rule, for every backend, that a child entity belongs to one
/// relation of one owner, across a whole store (docs/SEMANTICS.md,
/// "Relations and children").
///
/// A child names its parent through one foreign key and is stored once under
/// it, so a child entity held by relations of two entities (`notes` held by
/// `patients.notes` and by `visits.notes`) could not tell its two parents
/// apart: one parent's children would be read, moved or erased as the
/// other's. ``Entity/validate()`` refuses the forms one declaration shows
/// (two relations of one parent; a relation to a child that names another
/// owner); this rule also compares the declaration with what the store
/// holds: the schemas it has recorded and those of the storages it has
/// opened. Adapters call ``checkOpening(_:recorded:)`` when a storage is
/// opened, before anything is read or written; the ``Migrator`` calls
/// ``check(declared:recorded:)`` with each step's schemas before the step
/// writes.
public enum ChildHolders {
    /// Checks, for a storage of `type` about to be opened, its declaration
    /// (``Entity/validate()``) and then that no child entity of its tree
    /// (``EntitySchema/tree(for:)``) is held by a relation of another entity
    /// among `recorded`: every schema the store records, and those of the
    /// storages it has opened in this process.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``
    ///   (operation `open`) naming both holders and the child.
    public static func checkOpening<R: Record>(_ type: R.Type, recorded: some Sequence<EntitySchema>) throws {
        try R.entity.validate()
        try check(declared: EntitySchema.tree(for: type), recorded: recorded)
    }

    /// Checks that each child entity the relations of `declared` hold is held
    /// by one relation only, and by the owner it names, if it names one: among
    /// `declared`, and against the relations of the schemas of `recorded`
    /// whose entity `declared` does not redeclare. Two relations of `recorded`
    /// alone that hold one child are not this check's concern (no backend
    /// records them since this rule; a store that holds them refuses the
    /// storages of both).
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``
    ///   (operation `open`, entity the declared holder) naming both holders
    ///   and the child.
    public static func check(declared: [EntitySchema], recorded: some Sequence<EntitySchema>) throws {
        var holders: [String: Holder] = [:]
        let declaredByName = Dictionary(declared.map { ($0.entity, $0) }, uniquingKeysWith: { first, _ in first })
        for schema in declared {
            for relation in schema.relations {
                let holder = Holder(entity: schema.entity, relation: relation.name)
                if let named = declaredByName[relation.child]?.owner, named != schema.entity {
                    throw refusal(
                        child: relation.child, holder: holder,
                        because: "which names '\(named)' as its owner")
                }
                if let other = holders.updateValue(holder, forKey: relation.child), other != holder {
                    throw refusal(child: relation.child, holder: holder, because: "which \(other) holds")
                }
            }
        }
        // Sorted, so that a store recording several holders names the same one
        // on every backend.
        for schema in recorded.sorted(by: { $0.entity < $1.entity }) where declaredByName[schema.entity] == nil {
            for relation in schema.relations {
                guard let holder = holders[relation.child], holder.entity != schema.entity else { continue }
                let other = Holder(entity: schema.entity, relation: relation.name)
                throw refusal(child: relation.child, holder: holder, because: "which \(other) of the store holds")
            }
        }
    }

    /// Checks, for a storage of `type` about to be opened, that no relation
    /// of its tree takes as its children records that were stored on their
    /// own: those of a child type that names no owner (no `ownedBy:`),
    /// written through its own storage before any storage of its holder was
    /// opened in the store (docs/SEMANTICS.md, "Relations and children").
    /// No holder was known when they were written, so none was checked for
    /// them; taken as children they would be orphans. Adapters call it
    /// where they call ``checkOpening(_:recorded:)``, before anything is
    /// recorded or written.
    ///
    /// - Parameters:
    ///   - type: the record type whose storage is about to be opened.
    ///   - recorded: as for ``checkOpening(_:recorded:)``.
    ///   - holdsRecordsOnTheirOwn: the adapter's answer, whether the entity
    ///     `child` holds records stored on their own, not as children of
    ///     the entity `holder`. Asked only of a child whose schema is among
    ///     `recorded` (its storage was opened) and that no relation among
    ///     `recorded` holds.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``
    ///   (operation `open`, entity the holder) naming the holder, the child
    ///   and what to do (``storedOnTheirOwn(child:holder:relation:)``).
    public static func checkStoredOnTheirOwn<R: Record>(
        _ type: R.Type, recorded: some Sequence<EntitySchema>,
        holdsRecordsOnTheirOwn: (_ child: String, _ holder: String) throws -> Bool
    ) throws {
        let recorded = Array(recorded)
        let names = Set(recorded.map(\.entity))
        for schema in EntitySchema.tree(for: type) {
            for relation in schema.relations where names.contains(relation.child) {
                guard holder(of: relation.child, recorded: recorded) == nil,
                    try holdsRecordsOnTheirOwn(relation.child, schema.entity)
                else { continue }
                throw storedOnTheirOwn(child: relation.child, holder: schema.entity, relation: relation.name)
            }
        }
    }

    /// The refusal of ``checkStoredOnTheirOwn(_:recorded:holdsRecordsOnTheirOwn:)``:
    /// the relation `holder.relation` would take as its children the records
    /// of `child` stored on their own.
    public static func storedOnTheirOwn(child: String, holder: String, relation: String) -> StorageError {
        StorageError(
            .schemaMismatch, .open, entity: holder,
            message: "'\(child)' holds records written through its own storage before any storage of '\(holder)' "
                + "was opened in this store, so no '\(holder)' record was checked for them, and relation "
                + "'\(holder).\(relation)' cannot take them as its children; open the storage of '\(holder)' "
                + "before writing '\(child)' through its own storage, or erase the records of '\(child)' first "
                + "(see docs/SEMANTICS.md)")
    }

    /// The relation among `recorded` that holds `child`, as its holder's
    /// entity name and the child's foreign-key field: how a store finds the
    /// owner a child type that names none (no `ownedBy:`) must name when it
    /// is written through its own storage (docs/SEMANTICS.md, "Relations and
    /// children"), whether or not the holder's storage was opened since the
    /// store was. The first in entity-name order, should a store record two.
    public static func holder(
        of child: String, recorded: some Sequence<EntitySchema>
    ) -> (entity: String, foreignKey: String)? {
        for schema in recorded.sorted(by: { $0.entity < $1.entity }) {
            if let relation = schema.relations.first(where: { $0.child == child }) {
                return (schema.entity, relation.foreignKey)
            }
        }
        return nil
    }

    /// One relation of one entity.
    struct Holder: Hashable, CustomStringConvertible {
        var entity: String
        var relation: String

        var description: String { "relation '\(entity).\(relation)'" }
    }

    private static func refusal(child: String, holder: Holder, because reason: String) -> StorageError {
        StorageError(
            .schemaMismatch, .open, entity: holder.entity,
            message: "\(holder) holds '\(child)', \(reason); a child entity belongs to one relation of one owner "
                + "(its one foreign key could not tell the two apart; see docs/SEMANTICS.md)")
    }
}

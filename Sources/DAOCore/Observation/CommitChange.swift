import Synchronization

/// What one successful commit changed, as a storage reports it to its store's
/// ``CommitBroadcaster``: which entity, and where the storage call knows them,
/// which records.
///
/// Building one costs a writer one small allocation (the records array is
/// shared, not copied), and only when someone observes the store: the
/// broadcaster takes it as an autoclosure. Everything else (the keys, the
/// children, the entities a cascade reaches) is worked out later, off the
/// writer's thread.
///
/// ```swift
/// try connection.transaction { … }
/// database.commits.didCommit(.persisted(records))
/// ```
public struct CommitChange: Sendable {
    /// `nil` when anything may have changed (another process committed).
    let payload: (any ChangePayload)?

    /// The `records` (with their children) were inserted or replaced.
    public static func persisted<R: Record>(_ records: [R]) -> CommitChange {
        CommitChange(payload: Persisted(records: records))
    }

    /// Records of `type` (with their children) were inserted or replaced;
    /// which ones the storage call did not keep (nobody observed the store
    /// when it began, so the records were let go as they were written).
    public static func persisted<R: Record>(_ type: R.Type) -> CommitChange {
        CommitChange(payload: WrittenUnknown<R>())
    }

    /// The records of `type` with these keys (and their children) were erased.
    /// Keys with no record may be among them.
    public static func erased<R: Record>(_ type: R.Type, primaryKeys: [R.PrimaryKey]) -> CommitChange {
        CommitChange(payload: ErasedKeys<R>(keys: primaryKeys))
    }

    /// Records of `type` that the storage call did not name one by one (erase by
    /// predicate, erase all), and their children, were erased.
    public static func erased<R: Record>(_ type: R.Type) -> CommitChange {
        CommitChange(payload: ErasedUnknown<R>())
    }

    /// Anything in the store may have changed: another process committed.
    public static let anything = CommitChange(payload: nil)
}

/// What a change did to the records of one entity, as an observer sees it.
enum EntityEffect<E: Record>: Sendable {
    /// Records of the entity changed, which ones is not known.
    case unknown
    /// These records were inserted or replaced; `keys` are their primary keys.
    case written(keys: Set<StoredValue>, records: [E])
    /// The records with these keys were erased (if they existed).
    case erased(keys: Set<StoredValue>)
}

/// What a change did to the children of the records it names, for an entity
/// owned directly by the changed one.
enum ChildEffect<C: Record>: Sendable {
    /// Children of these parents were replaced by `children` (all of them, for
    /// every parent named); `childKeys` are the children's primary keys.
    case replaced(parentKeys: Set<StoredValue>, childKeys: Set<StoredValue>, children: [C])
    /// The children of these parents were erased.
    case erased(parentKeys: Set<StoredValue>)
    /// Children changed, which ones is not known.
    case unknown
}

/// A ``ChildEffect`` with the foreign key that links the child to the parent;
/// `nil` effect when the entity is not a direct child of the changed one.
struct ChildEffectOnEntity<C: Record>: Sendable {
    var foreignKey: String
    var effect: ChildEffect<C>
}

/// The effects of one change on each observed record type, worked out once per
/// change and shared by every observer of that type.
///
/// Used only on the broadcaster's queue; the lock makes that safe to state.
final class EffectCache: Sendable {
    private let own = Mutex<[ObjectIdentifier: any Sendable]>([:])
    private let children = Mutex<[ObjectIdentifier: any Sendable]>([:])

    /// A cached answer, which may be `nil`.
    private struct Entry<Value: Sendable>: Sendable {
        var value: Value
    }

    func effect<E: Record>(of payload: any ChangePayload, on type: E.Type) -> EntityEffect<E> {
        let key = ObjectIdentifier(type)
        if let entry = own.withLock({ $0[key] }), let cached = entry as? Entry<EntityEffect<E>> { return cached.value }
        let effect = payload.effect(on: type)
        own.withLock { $0[key] = Entry(value: effect) }
        return effect
    }

    func childEffect<C: Record>(of payload: any ChangePayload, on type: C.Type) -> ChildEffectOnEntity<C>? {
        let key = ObjectIdentifier(type)
        if let entry = children.withLock({ $0[key] }), let cached = entry as? Entry<ChildEffectOnEntity<C>?> {
            return cached.value
        }
        let effect = payload.childEffect(on: type)
        children.withLock { $0[key] = Entry(value: effect) }
        return effect
    }
}

/// The type-specific part of a ``CommitChange``; every method runs on the
/// broadcaster's queue, never on the writer's thread.
protocol ChangePayload: Sendable {
    /// The entity the storage call was made on.
    var entityName: String { get }
    /// The entity and every entity it owns, transitively: what a cascade reaches.
    func subtree() -> Set<String>
    /// The effect on the entity itself, seen as records of type `E` (its own type).
    func effect<E: Record>(on type: E.Type) -> EntityEffect<E>
    /// The effect on `C` when `C` is a direct child of this entity, else `nil`.
    func childEffect<C: Record>(on type: C.Type) -> ChildEffectOnEntity<C>?
}

private struct Persisted<R: Record>: ChangePayload {
    let records: [R]

    var entityName: String { R.entity.name }
    func subtree() -> Set<String> { R.subtreeEntityNames() }

    func effect<E: Record>(on type: E.Type) -> EntityEffect<E> {
        guard let typed = records as? [E] else { return .unknown }
        return .written(keys: Set(records.map { $0.primaryKey.storedValue }), records: typed)
    }

    func childEffect<C: Record>(on type: C.Type) -> ChildEffectOnEntity<C>? {
        guard let relation = R.ownedRelation(for: C.self) else { return nil }
        let keys = Set(records.map { $0.primaryKey.storedValue })
        guard let children = relation.children(of: records) as? [C] else {
            return ChildEffectOnEntity(foreignKey: relation.foreignKeyField, effect: .unknown)
        }
        return ChildEffectOnEntity(
            foreignKey: relation.foreignKeyField,
            effect: .replaced(
                parentKeys: keys, childKeys: Set(children.map { $0.primaryKey.storedValue }), children: children))
    }
}

private struct ErasedKeys<R: Record>: ChangePayload {
    let keys: [R.PrimaryKey]

    var entityName: String { R.entity.name }
    func subtree() -> Set<String> { R.subtreeEntityNames() }

    func effect<E: Record>(on type: E.Type) -> EntityEffect<E> {
        .erased(keys: Set(keys.map(\.storedValue)))
    }

    func childEffect<C: Record>(on type: C.Type) -> ChildEffectOnEntity<C>? {
        guard let relation = R.ownedRelation(for: C.self) else { return nil }
        return ChildEffectOnEntity(foreignKey: relation.foreignKeyField, effect: .erased(parentKeys: Set(keys.map(\.storedValue))))
    }
}

/// Records of `R` written, which ones not known: the same effects as an
/// erasure of unknown records (every observer of the entity or its children
/// reads again).
private struct WrittenUnknown<R: Record>: ChangePayload {
    var entityName: String { R.entity.name }
    func subtree() -> Set<String> { R.subtreeEntityNames() }
    func effect<E: Record>(on type: E.Type) -> EntityEffect<E> { .unknown }
    func childEffect<C: Record>(on type: C.Type) -> ChildEffectOnEntity<C>? {
        R.ownedRelation(for: C.self).map { ChildEffectOnEntity(foreignKey: $0.foreignKeyField, effect: .unknown) }
    }
}

private struct ErasedUnknown<R: Record>: ChangePayload {
    var entityName: String { R.entity.name }
    func subtree() -> Set<String> { R.subtreeEntityNames() }
    func effect<E: Record>(on type: E.Type) -> EntityEffect<E> { .unknown }
    func childEffect<C: Record>(on type: C.Type) -> ChildEffectOnEntity<C>? {
        R.ownedRelation(for: C.self).map { ChildEffectOnEntity(foreignKey: $0.foreignKeyField, effect: .unknown) }
    }
}

extension ToManyRelation {
    /// The children every parent in `parents` holds, in one array (`[Child]`).
    func children(of parents: [Parent]) -> any Sendable {
        var all: [Child] = []
        for parent in parents { all.append(contentsOf: parent[keyPath: children]) }
        return all
    }
}

extension Record {
    /// This entity's name and those of every entity it owns, transitively.
    static func subtreeEntityNames() -> Set<String> {
        var names: Set<String> = []
        collectSubtree(into: &names)
        return names
    }

    static func collectSubtree(into names: inout Set<String>) {
        guard names.insert(entity.name).inserted else { return }
        for relation in entity.relations {
            relation.childType.collectSubtree(into: &names)
        }
    }
}

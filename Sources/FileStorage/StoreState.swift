import DAOCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The loaded tables and the manifest.
///
/// `@unchecked Sendable`: the only reference lives inside `FileStore`'s
/// ``StateLock``. It is changed only holding that lock exclusively (and the
/// store's writer lock, except by a write's last step); readers hold it
/// shared and change nothing: they find tables already loaded
/// (``readTable(_:)``), and what a table derives for queries is made when
/// the table is (``DocumentTable/valueReaders``).
final class StoreState: @unchecked Sendable {
    let directory: URL
    private(set) var coder: DocumentCoder
    let durability: Durability
    private(set) var manifest: Manifest
    private var tables: [String: any AnyDocumentTable] = [:]
    private var inTransaction = false
    /// The tables whose changes a prepared commit set aside, and whether it
    /// writes each one's whole document (``prepareCommit()``).
    private var committing: [(table: any AnyDocumentTable, full: Bool)] = []
    /// Set by ``close()``.
    private(set) var isClosed = false
    /// Set while a read that found a table not loaded runs again holding
    /// both locks (``readTable(_:)``).
    var loadsOnRead = false
    /// The keys ``storedKeys(of:)`` decoded, by entity.
    private var keptKeys: [String: KeptKeys] = [:]
    /// How many documents and deltas ``storedKeys(of:)`` has decoded (for tests).
    private(set) var keyDecodes = 0

    /// The primary keys of an entity decoded from `files`, its document and
    /// deltas, with the field they were read from.
    private struct KeptKeys {
        var files: [String]
        var keyField: String
        var keys: Set<StoredValue>
    }

    init(directory: URL, format: FileFormat, durability: Durability, manifest: Manifest) {
        self.directory = directory
        self.coder = DocumentCoder(format: format)
        self.durability = durability
        self.manifest = manifest
    }

    /// Whether a storage has loaded an entity's table (a migration must come first).
    var hasLoadedTables: Bool { !tables.isEmpty }

    /// Takes `next` as the manifest a migration committed.
    func adopt(migrated next: Manifest) {
        manifest = next
        keptKeys.removeAll()
    }

    /// From now on, property-list documents keep `-0.0` apart from `0.0`
    /// and write NaNs canonical (``DocumentCoder/respellsReals``).
    func respellReals() {
        coder.respellsReals = true
    }

    /// Forgets the loaded tables; the store is closed.
    func close() {
        isClosed = true
        tables.removeAll()
        keptKeys.removeAll()
    }

    // MARK: Schemas

    /// Checks the schemas the manifest records for the entities a storage for
    /// `type` sets up against their declarations, then records those it does
    /// not hold yet by replacing the manifest (atomically, as a commit does).
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` naming every difference;
    ///   what writing the manifest throws.
    func checkSchemas<R: Record>(of type: R.Type) throws {
        try EntitySchema.checkTree(for: type) { manifest.schemas?[$0] }
        // A child entity held by another entity's relation too. The manifest
        // in memory records the storages opened in this process as well.
        let recorded = (manifest.schemas ?? [:]).values
        try ChildHolders.checkOpening(type, recorded: recorded)
        // A child entity holding records written on their own before its holder.
        try ChildHolders.checkStoredOnTheirOwn(
            type, recorded: recorded, holdsRecordsOnTheirOwn: self.holdsRecordsOnTheirOwn)
        let missing = EntitySchema.tree(for: type).filter { manifest.schemas?[$0.entity] == nil }
        guard !missing.isEmpty else { return }
        for schema in missing {
            try checkUnrecordedDocument(of: schema)
        }
        var next = manifest
        var schemas = next.schemas ?? [:]
        for schema in missing { schemas[schema.entity] = schema }
        next.schemas = schemas
        manifest = try FileStore.write(next, in: directory, durability: durability, operation: .open)
    }

    /// Whether the entity `child` holds records while `holder` holds none:
    /// records written through the child's own storage, not as children of
    /// `holder`
    /// (``ChildHolders/checkStoredOnTheirOwn(_:recorded:holdsRecordsOnTheirOwn:)``).
    /// A holder with a document or deltas of its own was written before
    /// schemas were recorded (its schema is not, or the child would have a
    /// recorded holder): its children are its own.
    private func holdsRecordsOnTheirOwn(_ child: String, holder: String) throws -> Bool {
        guard manifest.documents[holder] == nil, manifest.deltas?[holder] == nil else { return false }
        if let table = tables[child] { return table.recordCount > 0 }
        return try !storedKeys(of: child).isEmpty
    }

    /// For a store written before schemas were recorded: refuses a document
    /// whose records hold keys that `schema` does not declare (a field the
    /// record type dropped), which decoding would silently skip and the next
    /// write would erase. Types cannot be told from a document, so only the
    /// names are compared.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` naming the keys;
    ///   ``StorageError/Kind/corrupt`` when the document is not one.
    private func checkUnrecordedDocument(of schema: EntitySchema) throws {
        guard let name = manifest.documents[schema.entity] else { return }
        let url = directory.appendingPathComponent(name)
        let data = try documentData(named: name, entity: schema.entity)
        let tree: Any
        do {
            switch coder.format {
            case .json: tree = try JSONSerialization.jsonObject(with: data)
            case .propertyList: tree = try PropertyListSerialization.propertyList(from: data, format: nil)
            }
        } catch {
            throw StorageError(
                .corrupt, .open, entity: schema.entity, path: url.path, message: "the document does not parse",
                underlying: error)
        }
        guard let records = (tree as? [String: Any])?["records"] as? [[String: Any]] else {
            throw StorageError(
                .corrupt, .open, entity: schema.entity, path: url.path, message: "the document holds no list of records")
        }
        let declared = Set(schema.fields.map(\.name) + schema.relations.map(\.name))
        var undeclared = Set<String>()
        for record in records {
            for key in record.keys where !declared.contains(key) { undeclared.insert(key) }
        }
        guard !undeclared.isEmpty else { return }
        throw StorageError(
            .schemaMismatch, .open, entity: schema.entity, path: url.path,
            message: "the document, written before schemas were recorded, holds the field(s) "
                + undeclared.sorted().map { "'\($0)'" }.joined(separator: ", ")
                + " that the record type does not declare (a store is never changed to fit a record type; see docs/SCHEMA.md)")
    }

    // MARK: Tables

    /// The table of `R`, loaded from its document on first use together with
    /// its owner's and its children's tables.
    func table<R: Record>(_ type: R.Type) throws -> DocumentTable<R> {
        let name = R.entity.name
        if let table = tables[name] {
            guard let typed = table as? DocumentTable<R> else {
                throw StorageError(
                    .schemaMismatch, .open, entity: name,
                    message: "two record types declare the entity name '\(name)'; one store can hold only one")
            }
            return typed
        }
        if let owner = R.entity.owner, tables[owner.entityName] == nil {
            try loadOwner(owner)
            if let table = tables[name] as? DocumentTable<R> { return table }
        }
        let foreignKey = R.entity.owner.flatMap { $0.ownedRelation(for: R.self)?.foreignKeyField }
        let documentName = manifest.documents[name]
        let records = try documentName.map { try loadDocument(R.self, named: $0) } ?? []
        let table = DocumentTable<R>(records: records, documentName: documentName, foreignKey: foreignKey, format: coder.format)
        for deltaName in manifest.deltas?[name] ?? [] {
            table.apply(try loadDelta(R.self, named: deltaName))
        }
        tables[name] = table
        if inTransaction { table.begin() }
        for relation in R.entity.relations {
            try loadChildTable(relation)
        }
        return table
    }

    /// Thrown by ``readTable(_:)`` for a table not loaded yet: the read is
    /// run again holding both locks.
    struct TableNotLoaded: Error {}

    /// The table of `R` for a read, which holds the state lock shared and
    /// must not load it: ``TableNotLoaded`` when it is not loaded (a
    /// storage's opening loads its entity's table and those of its owner
    /// and children) unless the state is held exclusively for a write or
    /// ``loadsOnRead``.
    @inline(__always)
    func readTable<R: Record>(_ type: R.Type) throws -> DocumentTable<R> {
        if let table = tables[R.entity.name] {
            if let typed = table as? DocumentTable<R> { return typed }
            return try self.table(type)  // says which two types share the name
        }
        guard inTransaction || loadsOnRead else { throw TableNotLoaded() }
        return try table(type)
    }

    /// Whether a record of the entity `name` is stored under a primary key:
    /// its loaded table's answer, or, for an entity whose record type this
    /// store has not loaded (the holder of a child type that names no owner,
    /// whose storage was not opened since the store was), its stored keys
    /// (``storedKeys(of:)``).
    func keyTest(of name: String) throws -> (StoredValue) -> Bool {
        if let table = tables[name] { return table.holdsKey }
        let keys = try storedKeys(of: name)
        return { keys.contains($0) }
    }

    /// The primary keys of the entity `name` in its document and deltas,
    /// decoded alone, for an entity whose record type this store has not
    /// loaded. Kept with the names of the files they were decoded from and
    /// decoded again only when the manifest names other files for the entity:
    /// every commit that writes the entity names new ones (their names carry
    /// the commit's generation), and so does a migration. So a child type
    /// that names no owner, persisted through its own storage, decodes its
    /// holder's files once, not at each call.
    func storedKeys(of name: String) throws -> Set<StoredValue> {
        guard let keyField = manifest.schemas?[name]?.fields.first?.name else { return [] }
        let documentName = manifest.documents[name]
        let files = (documentName.map { [$0] } ?? []) + (manifest.deltas?[name] ?? [])
        if let kept = keptKeys[name], kept.files == files, kept.keyField == keyField { return kept.keys }
        var keys = Set<StoredValue>()
        if let documentName {
            let document = try decodeKeys(named: documentName, entity: name)
            keys.formUnion(document.records.compactMap { $0[keyField]?.storedValue })
        }
        for deltaName in manifest.deltas?[name] ?? [] {
            let delta = try decodeKeys(named: deltaName, entity: name)
            keys.subtract((delta.erased ?? []).compactMap(\.storedValue))
            keys.formUnion(delta.records.compactMap { $0[keyField]?.storedValue })
        }
        keptKeys[name] = KeptKeys(files: files, keyField: keyField, keys: keys)
        return keys
    }

    private func decodeKeys(named file: String, entity: String) throws -> StoredKeys {
        keyDecodes += 1
        let data = try documentData(named: file, entity: entity)
        do {
            return try coder.decode(StoredKeys.self, from: data)
        } catch {
            throw StorageError(
                .corrupt, .persist, entity: entity, path: directory.appendingPathComponent(file).path,
                message: "the primary keys of '\(entity)' do not decode: \(Self.describe(error))", underlying: error)
        }
    }

    private func loadOwner<O: Record>(_ owner: O.Type) throws {
        _ = try table(owner)
    }

    private func loadChildTable<Relation: ToManyRelation>(_ relation: Relation) throws {
        // A child entity that does not name its owner was loaded without an
        // index on the foreign key, which reading a parent's children needs.
        try table(Relation.Child.self).ensureIndex(on: relation.foreignKeyField)
    }

    /// The bytes of the document `name` of `entity`, checked against the size
    /// and CRC-32C the manifest recorded for it.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` when it is missing or its bytes
    ///   differ; ``StorageError/Kind/io`` when it cannot be read.
    func documentData(named name: String, entity: String) throws -> Data {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StorageError(
                .corrupt, .open, entity: entity, path: url.path,
                message: "the manifest names the document '\(name)', which is missing")
        }
        let data = try FileIO.read(url, operation: .open)
        if let expected = manifest.checksums?[name] {
            let actual = CRC32C.checksum(data)
            guard data.count == expected.size, actual == expected.crc32c else {
                throw StorageError(
                    .corrupt, .open, entity: entity, path: url.path,
                    message: "the document is damaged: \(data.count) bytes with CRC-32C \(actual), the manifest recorded \(expected.size) bytes with CRC-32C \(expected.crc32c)")
            }
        }
        return data
    }

    private func loadDocument<R: Record>(_ type: R.Type, named name: String) throws -> [R] {
        try load(Document<R>.self, named: name, entity: R.entity.name).records
    }

    private func loadDelta<R: Record>(_ type: R.Type, named name: String) throws -> Delta<R> {
        try load(Delta<R>.self, named: name, entity: R.entity.name)
    }

    /// Reads, checks (checksum, layout version, entity) and decodes the file
    /// `name` of `entity`.
    private func load<D: StoredDocument>(_ type: D.Type, named name: String, entity: String) throws -> D {
        let url = directory.appendingPathComponent(name)
        let data = try documentData(named: name, entity: entity)
        if coder.format == .propertyList && !coder.respellsReals && mayHoldRespelledZero(data) {
            // The document may hold a -0.0: the next ones keep it apart from 0.0.
            coder.respellsReals = true
        }
        let document: D
        do {
            document = try coder.decode(D.self, from: data)
        } catch let refused as RefusedRecord {
            // The record type's own `init(from:)` refused a value it was
            // given, whatever it threw (a `DecodingError` too): not damage of
            // the file, and `.decoding` as on the other backends.
            throw StorageError(
                .decoding, .open, entity: entity, path: url.path,
                message: "a record of the \(D.kind) does not decode as '\(entity)': \(Self.describe(refused.underlying))",
                underlying: refused.underlying)
        } catch {
            // The decoder's own error about the document (its syntax, its
            // layout): the file is not what the store wrote.
            throw StorageError(
                .corrupt, .open, entity: entity, path: url.path,
                message: "the \(D.kind) does not decode as '\(entity)' records: \(Self.describe(error))",
                underlying: error)
        }
        guard document.version == D.currentVersion else {
            throw StorageError(
                .schemaMismatch, .open, entity: entity, path: url.path,
                message: "the \(D.kind) has layout version \(document.version); this library reads version \(D.currentVersion)")
        }
        guard document.entity == entity else {
            throw StorageError(
                .corrupt, .open, entity: entity, path: url.path,
                message: "the \(D.kind) holds entity '\(document.entity)', not '\(entity)'")
        }
        return document
    }

    // MARK: Transactions

    func begin() {
        inTransaction = true
        for table in tables.values { table.begin() }
    }

    func rollback() {
        for table in tables.values { table.rollback() }
        inTransaction = false
    }

    /// The most delta documents an entity has before the next commit merges
    /// them into one.
    static let maximumDeltas = 8

    /// Takes what each changed table's new document or delta will hold and
    /// the manifest that will name them, then sets each changed table's
    /// changes aside (``AnyDocumentTable/setAside()``): readers see the
    /// committed state while the commit encodes its files
    /// (``PreparedCommit/encode()``) and writes them
    /// (``PreparedCommit/Encoded/write(in:durability:beforeManifest:)``),
    /// without the store's state lock, and ``finishCommit(_:)`` applies the
    /// changes again. Returns `nil`, the transaction over, when nothing
    /// changed.
    ///
    /// A table whose changes since its document (this commit's and its
    /// deltas') cover at most half of its records gets a delta: the records it
    /// wrote and the keys it erased, appended to the entity's deltas, or, when
    /// there are ``maximumDeltas`` already, merged with them into one. Otherwise
    /// (and for a table written from empty, cleared, or kept in a version 1
    /// document) the whole document is written and its deltas dropped.
    ///
    /// - Throws: ``StorageError/Kind/encoding`` for a key that is not a
    ///   primary key, before anything is set aside (the caller rolls the
    ///   transaction back).
    func prepareCommit() throws -> PreparedCommit? {
        let dirty = tables.values.filter(\.isDirty)
        guard !dirty.isEmpty else {
            for table in tables.values { table.commit() }
            inTransaction = false
            return nil
        }
        guard let storeId = manifest.storeId else {
            throw StorageError(.corrupt, .persist, path: directory.path, message: "the store's manifest has no identity")
        }
        var next = manifest
        next.version = Manifest.currentVersion
        next.generation += 1
        next.checksums = next.checksums ?? [:]
        var files: [PreparedCommit.File] = []
        var superseded: [PreparedCommit.Superseded] = []
        var modes: [(table: any AnyDocumentTable, full: Bool)] = []
        for table in dirty {
            let entity = table.entityName
            let name = StoreFiles.documentName(
                storeId: storeId, generation: next.generation, entity: entity, format: coder.format)
            let url = directory.appendingPathComponent(name)
            let base = next.documents[entity]
            let deltas = next.deltas?[entity] ?? []
            let merging = deltas.count >= Self.maximumDeltas
            var keys: Set<StoredValue>?
            if let base, StoreFiles.isOwnedDocument(base, storeId: storeId),
                let changed = table.keysSinceBase(merging: merging)
            {
                // Every change since the base counts: compact once they reach half the records.
                let sinceBase = merging ? changed.count : changed.count + table.changedSinceBaseCount
                if sinceBase * 2 <= table.recordCount { keys = changed }
            }
            let encoding: DocumentEncoding
            if let keys {
                encoding = try table.deltaEncoding(keys, with: coder)
            } else {
                encoding = table.documentEncoding(with: coder)
            }
            files.append(PreparedCommit.File(url: url, name: name, entity: entity, encoding: encoding))
            var replaced: [String] = []
            if keys != nil {
                replaced = merging ? deltas : []
                var deltasNow = next.deltas ?? [:]
                deltasNow[entity] = (merging ? [] : deltas) + [name]
                next.deltas = deltasNow
            } else {
                replaced = (base.map { [$0] } ?? []) + deltas
                next.documents[entity] = name
                next.deltas?[entity] = nil
            }
            for old in replaced {
                next.checksums?[old] = nil
                superseded.append(PreparedCommit.Superseded(name: old, entity: entity))
            }
            modes.append((table, keys == nil))
        }
        if next.deltas?.isEmpty == true { next.deltas = nil }
        for table in tables.values {
            if table.isDirty { table.setAside() } else { table.commit() }
        }
        committing = modes
        inTransaction = false
        return PreparedCommit(files: files, manifest: next, superseded: superseded, storeId: storeId)
    }

    /// The prepared commit's files are on disk and `written` names them:
    /// the changes set aside are applied again, now committed.
    func finishCommit(_ written: Manifest) {
        manifest = written
        for mode in committing {
            mode.table.documentName = written.documents[mode.table.entityName]
            mode.table.restoreSetAside(wroteWhole: mode.full)
        }
        committing = []
    }

    /// The prepared commit's files could not be written: the tables hold
    /// the committed state already, and the changes set aside are dropped.
    func abandonCommit() {
        for mode in committing { mode.table.dropSetAside() }
        committing = []
    }

    // MARK: Errors

    static func wrap(_ error: any Error, _ operation: StorageError.Operation, _ entity: String, path: String)
        -> StorageError
    {
        if let error = error as? StorageError {
            return error.with(operation: error.operation == .open ? nil : operation, entity: entity, path: path)
        }
        return StorageError(.engine, operation, entity: entity, path: path, message: describe(error), underlying: error)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            return "data corrupted at \(codingPath(context.codingPath)): \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)' at \(codingPath(context.codingPath))"
        case DecodingError.typeMismatch(let type, let context):
            return "expected \(type) at \(codingPath(context.codingPath)): \(context.debugDescription)"
        case DecodingError.valueNotFound(let type, let context):
            return "missing \(type) value at \(codingPath(context.codingPath))"
        case EncodingError.invalidValue(let value, let context):
            return "invalid value \(value) at \(codingPath(context.codingPath)): \(context.debugDescription)"
        default:
            return String(describing: error)
        }
    }

    private static func codingPath(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "the top level" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}

import CLMDB
import DAOCore
import Foundation

extension LMDBEnvironment: MigratableStore {
    /// Runs a migration in one LMDB write transaction: every value it
    /// rewrites, every index entry and the metadata commit together, or (on
    /// any error, or a crash) not at all. A full map is grown and the whole
    /// migration run again, as for any write.
    ///
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``;
    ///   ``StorageError/Kind/invalidArgument`` once a storage was handed
    ///   out (migrate before `storage(for:)`); what `body` and LMDB throw.
    public func withMigrationTransaction<T>(_ body: (any MigrationTransaction) throws -> T) throws -> T {
        var opened: [DatabaseName: MDB_dbi] = [:]
        // Inside the write transaction, so that a closed environment says `closed`.
        let result = try write(.open) { txn in
            guard !handedOutStorage.withLock({ $0 }) else {
                throw StorageError(
                    .invalidArgument, .open, path: path,
                    message: "a migration must run before the environment hands out storages")
            }
            let migration = LMDBMigrationTransaction(txn.handle, path: path, bounds: valueBounds)
            let result = try body(migration)
            opened = migration.opened
            return result
        }
        adopt(handles: opened)
        return result
    }
}

/// A migration inside one LMDB write transaction. Values are positional, so
/// a renamed field changes only the recorded schema; an added or dropped
/// index fills or empties its own database; every other change rewrites each
/// value of the entity (with its `#id` and index entries) in the new layout.
/// Values are written in the current format (``ValueSchema/formatVersion``,
/// with its checksum); the recorded schema says which fields a value holds.
final class LMDBMigrationTransaction: MigrationTransaction {
    let handle: OpaquePointer
    let path: String
    /// Where the data file is mapped: every key and value read is checked
    /// against it before it is copied, as on every other read.
    let bounds: ValueBounds
    /// The databases this transaction opened, by name.
    private(set) var opened: [DatabaseName: MDB_dbi] = [:]

    init(_ handle: OpaquePointer, path: String, bounds: ValueBounds) {
        self.handle = handle
        self.path = path
        self.bounds = bounds
    }

    // MARK: Raw access

    private func check(_ code: Int32, _ call: @autoclosure () -> String) throws {
        try LMDBError.check(code, .open, path: path, call: call())
    }

    /// The database `name`, created when `create` is set; `nil` when it does not exist.
    private func database(_ name: String, duplicateSort: Bool = false, create: Bool) throws -> MDB_dbi? {
        if let dbi = opened[DatabaseName(name)] { return dbi }
        var flags: UInt32 = duplicateSort ? UInt32(MDB_DUPSORT) : 0
        if create { flags |= UInt32(MDB_CREATE) }
        var dbi: MDB_dbi = 0
        let code = mdb_dbi_open(handle, name, flags, &dbi)
        if code == MDB_NOTFOUND && !create { return nil }
        try LMDBError.check(code, .open, path: path, call: "mdb_dbi_open", context: "database '\(name)'")
        opened[DatabaseName(name)] = dbi
        return dbi
    }

    private func get(_ dbi: MDB_dbi, _ key: [UInt8]) throws -> [UInt8]? {
        var v = MDB_val()
        let code = key.withUnsafeBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            return mdb_get(handle, dbi, &k, &v)
        }
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_get")
        return [UInt8](try bounds.lent(v, .open))
    }

    private func put(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        let code = key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                return mdb_put(handle, dbi, &k, &v, 0)
            }
        }
        try check(code, "mdb_put")
    }

    private func delete(_ dbi: MDB_dbi, _ key: [UInt8]) throws {
        let code = key.withUnsafeBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            return mdb_del(handle, dbi, &k, nil)
        }
        if code == MDB_NOTFOUND { return }
        try check(code, "mdb_del")
    }

    /// Empties database `name` if it exists (the handle stays valid for
    /// whoever cached it).
    private func empty(_ name: String, duplicateSort: Bool = false) throws {
        guard let dbi = try database(name, duplicateSort: duplicateSort, create: false) else { return }
        try check(mdb_drop(handle, dbi, 0), "mdb_drop")
    }

    /// Every entry of `dbi`, in key order, copied out.
    private func entries(_ dbi: MDB_dbi) throws -> [(key: [UInt8], value: [UInt8])] {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val()
        var v = MDB_val()
        var result: [(key: [UInt8], value: [UInt8])] = []
        var code = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        while code == MDB_SUCCESS {
            result.append(([UInt8](try bounds.lent(k, .open)), [UInt8](try bounds.lent(v, .open))))
            code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if code != MDB_NOTFOUND { try check(code, "mdb_cursor_get") }
        return result
    }

    private var metadataDB: MDB_dbi {
        get throws {
            guard let dbi = try database(LMDBEnvironment.metadataDatabase, create: true) else {
                throw StorageError(.engine, .open, path: path, message: "the metadata database could not be opened")
            }
            return dbi
        }
    }

    private var linksDB: MDB_dbi {
        get throws {
            guard let dbi = try database("__links", create: true) else {
                throw StorageError(.engine, .open, path: path, message: "the links database could not be opened")
            }
            return dbi
        }
    }

    // MARK: MigrationTransaction

    func recordedSchemas() throws -> [String: EntitySchema] {
        let prefix = Array(StoreMetadataKey.schema("").utf8)
        var schemas: [String: EntitySchema] = [:]
        for (key, value) in try entries(try metadataDB) where key.starts(with: prefix) {
            let entity = String(decoding: key.dropFirst(prefix.count), as: UTF8.self)
            schemas[entity] = try EntitySchema.decode(value, entity: entity)
        }
        return schemas
    }

    func metadata(_ key: String) throws -> [UInt8]? {
        try get(try metadataDB, Array(key.utf8))
    }

    func setMetadata(_ key: String, _ value: [UInt8]) throws {
        try put(try metadataDB, Array(key.utf8), value)
    }

    func record(_ schema: EntitySchema) throws {
        try setMetadata(StoreMetadataKey.schema(schema.entity), schema.encoded())
    }

    func rows(of schema: EntitySchema, in schemas: [String: EntitySchema]) throws -> [[StoredValue]] {
        guard let main = try database(schema.entity, create: false) else { return [] }
        return try entries(main).map { try Self.decode($0.value, schema) }
    }

    func rewrite(
        from old: EntitySchema?, to new: EntitySchema, rows: [[StoredValue]], in schemas: [String: EntitySchema]
    ) throws {
        if let old {
            try empty(old.entity)
            try empty(old.entity + "#id")
            for index in old.indexes { try empty(old.entity + "#" + index.name, duplicateSort: true) }
            if old.entity != new.entity {
                try renameLinks(from: old.entity, to: new.entity)
                try delete(try metadataDB, Array(StoreMetadataKey.schema(old.entity).utf8))
            }
        }
        let link = Self.link(of: new, in: schemas)
        if let link {
            try put(try linksDB, Array(new.entity.utf8), Array("\(link.owner)\n\(link.foreignKey)".utf8))
        }
        let foreignKey = link.flatMap { link in new.fields.firstIndex { $0.name == link.foreignKey } }
        guard let main = try database(new.entity, create: true), let byId = try database(new.entity + "#id", create: true)
        else { return }
        // An index that leads with the foreign key has no database: the
        // parent's range serves it.
        let indexes = try new.indexes.filter { $0.fields.first != link?.foreignKey }.map { index in
            (
                dbi: try database(new.entity + "#" + index.name, duplicateSort: true, create: true),
                fields: index.fields.compactMap { name in new.fields.firstIndex { $0.name == name } }
            )
        }
        // Each child's key and its parent's, made into runs for `#id` once
        // every row is written (docs/LMDB.md, "Layout").
        var children: [(child: [UInt8], parent: [UInt8])] = []
        for row in rows {
            var pk: [UInt8] = []
            KeyCodec.append(untagged: row[0], to: &pk)
            var key: [UInt8] = []
            if let foreignKey {
                KeyCodec.append(untagged: row[foreignKey], to: &key)
            }
            key += pk
            try put(main, key, try Self.encode(row, new))
            if foreignKey != nil { children.append((pk, Array(key[..<(key.count - pk.count)]))) }
            for index in indexes {
                guard let dbi = index.dbi else { continue }
                var indexKey: [UInt8] = []
                for field in index.fields { KeyCodec.append(indexed: row[field], to: &indexKey) }
                try put(dbi, indexKey, key)
            }
        }
        for run in IdRun.runs(of: children) { try put(byId, run.first, run.value) }
        try record(new)
    }

    func drop(_ schema: EntitySchema, in schemas: [String: EntitySchema]) throws {
        // Emptied, not deleted, as a renamed entity's databases are.
        try empty(schema.entity)
        try empty(schema.entity + "#id")
        for index in schema.indexes { try empty(schema.entity + "#" + index.name, duplicateSort: true) }
        try delete(try linksDB, Array(schema.entity.utf8))
        try delete(try metadataDB, Array(StoreMetadataKey.schema(schema.entity).utf8))
    }

    func alter(
        _ change: NativeAlteration, from old: EntitySchema, to new: EntitySchema, in schemas: [String: EntitySchema]
    ) throws -> Bool {
        switch change {
        case .renameField(_, let to):
            // Values hold no names: only the schema, and the link of a
            // child whose foreign key this is, change.
            if let link = Self.link(of: new, in: schemas), link.foreignKey == to,
                try get(try linksDB, Array(new.entity.utf8)) != nil
            {
                try put(try linksDB, Array(new.entity.utf8), Array("\(link.owner)\n\(to)".utf8))
            }
        case .dropIndex(let index):
            try empty(old.entity + "#" + index.name, duplicateSort: true)
        case .addIndex(let index):
            // An index that leads with the foreign key has no database: the
            // parent's range serves it.
            if let link = Self.link(of: new, in: schemas), index.fields.first == link.foreignKey { break }
            guard let dbi = try database(new.entity + "#" + index.name, duplicateSort: true, create: true),
                let main = try database(new.entity, create: false)
            else { break }
            let fields = index.fields.compactMap { name in new.fields.firstIndex { $0.name == name } }
            for (key, value) in try entries(main) {
                let row = try Self.decode(value, old)
                var indexKey: [UInt8] = []
                for field in fields { KeyCodec.append(indexed: row[field], to: &indexKey) }
                try put(dbi, indexKey, key)
            }
        case .addField, .dropField, .renameEntity:
            return false
        }
        try record(new)
        return true
    }

    /// Points the links of `from`'s children (and `from`'s own) at `to`.
    private func renameLinks(from: String, to: String) throws {
        let links = try linksDB
        let prefix = Array((from + "\n").utf8)
        for (key, value) in try entries(links) {
            if key == Array(from.utf8) {
                try delete(links, key)
            } else if value.starts(with: prefix) {
                try put(links, key, Array((to + "\n").utf8) + value.dropFirst(prefix.count))
            }
        }
    }

    /// The owner of `schema` and the foreign key its relation names.
    private static func link(of schema: EntitySchema, in schemas: [String: EntitySchema]) -> (
        owner: String, foreignKey: String
    )? {
        // A child that names no owner is owned by the relation that holds it.
        let holder = schemas.values.filter { $0.relations.contains { $0.child == schema.entity } }.map(\.entity).min()
        guard let owner = schema.owner ?? holder,
            let relation = schemas[owner]?.relations.first(where: { $0.child == schema.entity })
        else { return nil }
        return (owner, relation.foreignKey)
    }

    // MARK: Values by schema

    /// A value in the layout ``ValueEncoder`` writes, from a row.
    static func encode(_ row: [StoredValue], _ schema: EntitySchema) throws -> [UInt8] {
        var bytes: [UInt8] = [ValueSchema.formatVersion]
        for (field, value) in zip(schema.fields, row) {
            if case .null = value {
                guard field.optional else {
                    throw StorageError(
                        .encoding, .open, entity: schema.entity, message: "field \(field) holds no value")
                }
                bytes.append(0)
                continue
            }
            if field.optional { bytes.append(1) }
            switch (field.type, value) {
            case (.integer, .integer(let integer)):
                Varint.append(zigzag: integer, to: &bytes)
            case (.bool, .integer(let integer)) where integer == 0 || integer == 1:
                bytes.append(UInt8(integer))
            case (.real, .real(let real)), (.date, .real(let real)):
                withUnsafeBytes(of: real.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
            case (.text, .text(let text)):
                let utf8 = Array(text.utf8)
                Varint.append(UInt64(utf8.count), to: &bytes)
                bytes.append(contentsOf: utf8)
            case (.blob, .blob(let blob)):
                Varint.append(UInt64(blob.count), to: &bytes)
                bytes.append(contentsOf: blob)
            default:
                throw StorageError(
                    .encoding, .open, entity: schema.entity, message: "the value \(value) does not fit field \(field)")
            }
        }
        let checksum = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        withUnsafeBytes(of: checksum.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// A row from a value written in `schema`'s layout.
    static func decode(_ value: [UInt8], _ schema: EntitySchema) throws -> [StoredValue] {
        var position = 0
        func corrupt(_ what: String) -> StorageError {
            StorageError(.corrupt, .open, entity: schema.entity, message: "a stored value \(what)")
        }
        // Format 2 ends with the CRC-32C of the bytes before it; format 1 has none.
        var bytes = value
        if bytes.first == ValueSchema.formatVersion {
            guard bytes.count > ValueSchema.checksumSize else { throw corrupt("ends early") }
            let body = bytes.count - ValueSchema.checksumSize
            var stored: UInt32 = 0
            for (shift, byte) in bytes[body...].enumerated() { stored |= UInt32(byte) << (8 * UInt32(shift)) }
            let actual = bytes[..<body].withUnsafeBytes { CRC32C.checksum($0) }
            guard stored == actual else { throw corrupt("does not match its checksum") }
            bytes.removeLast(ValueSchema.checksumSize)
            bytes[0] = ValueSchema.uncheckedFormatVersion
        }
        func byte() throws -> UInt8 {
            guard position < bytes.count else { throw corrupt("ends early") }
            defer { position += 1 }
            return bytes[position]
        }
        func varint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let next = try byte()
                guard shift < 64 else { throw corrupt("holds a varint that is too long") }
                result |= UInt64(next & 0x7F) << shift
                if next & 0x80 == 0 { return result }
                shift += 7
            }
        }
        func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count >= 0, count <= bytes.count - position else { throw corrupt("ends early") }
            defer { position += count }
            return bytes[position..<position + count]
        }
        guard try byte() == ValueSchema.uncheckedFormatVersion else { throw corrupt("has an unknown format") }
        var row: [StoredValue] = []
        row.reserveCapacity(schema.fields.count)
        for field in schema.fields {
            if field.optional, try byte() == 0 {
                row.append(.null)
                continue
            }
            switch field.type {
            case .integer:
                let raw = try varint()
                row.append(.integer(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)))
            case .bool:
                row.append(.integer(Int64(try byte())))
            case .real, .date:
                var pattern: UInt64 = 0
                for (shift, byte) in try take(8).enumerated() { pattern |= UInt64(byte) << (8 * UInt64(shift)) }
                row.append(.real(Double(bitPattern: pattern)))
            case .text:
                let count = try varint()
                guard count <= UInt64(Int.max) else { throw corrupt("has a bad length") }
                row.append(.text(String(decoding: try take(Int(count)), as: UTF8.self)))
            case .blob:
                let count = try varint()
                guard count <= UInt64(Int.max) else { throw corrupt("has a bad length") }
                row.append(.blob(Array(try take(Int(count)))))
            }
        }
        guard position == bytes.count else { throw corrupt("is longer than its schema") }
        return row
    }
}

import Foundation

/// One stored record's own fields, lent to a closure where the engine keeps
/// them: its text a `UTF8Span` and its bytes a `RawSpan` over the engine's
/// memory (an SQLite row, a value in LMDB's map), its numbers read when they
/// are asked for. Nothing is copied and no `String` is made, which is what a
/// read that consumes records without keeping them costs in C.
///
/// A view is lent by `forEachView(_:_:)` and its forms, and lives
/// only for the call of the closure: it cannot be copied or kept, and
/// neither can the spans it hands out. Fields are named by their position in
/// the entity's ``Entity/fields`` (the primary key is 0), which
/// ``Entity/position(of:)`` finds once:
///
/// ```swift
/// let text = try MessageRecord.entity.position(of: \.text)
/// var bytes = 0
/// try messages.forEachView(where: #Predicate { $0.dialogId == 7 }) { message in
///     bytes += try message.text(text).count
/// }
/// ```
///
/// A view answers what ``Storage/read(_:)-(Query<Self.Record>)`` answers for
/// the same fields: the same values, text repaired where the stored bytes
/// are not valid UTF-8 as a read repairs it. A record's relations are not
/// fields: a view has none (read the children with their own query).
///
/// Each accessor checks the field's declared type: asking for the text of
/// an integer field, or for a value of a field that holds `nil` (see
/// ``isNull(_:)``), throws ``StorageError``; so does a stored value that is
/// damaged or of another storage class, as the read would.
public struct RecordView<Record: DAOCore.Record>: ~Copyable {
    // What each accessor reads is copied here from the context once per
    // record: reached through the context's reference, every accessor that
    // was not inlined retained and released it.
    @usableFromInline unowned(unsafe) let context: ViewContext
    @usableFromInline let kind: ViewContext.Kind
    @usableFromInline let types: UnsafeMutablePointer<FieldType>
    /// The number of fields.
    public let fieldCount: Int
    @usableFromInline let offsets: UnsafeMutablePointer<Int>
    @usableFromInline let textIsValidated: Bool
    @usableFromInline let functions: UnsafePointer<ColumnFunctions>?
    /// The engine's row (SQLite: the statement stepped onto it).
    @usableFromInline let handle: OpaquePointer?
    /// The bytes of a packed value, or the cells' scratch bytes.
    @usableFromInline let base: UnsafeRawPointer?
    @usableFromInline let count: Int

    @inlinable
    package init(_ context: ViewContext, handle: OpaquePointer?, base: UnsafeRawPointer?, count: Int) {
        self.context = context
        kind = context.kind
        types = context.types
        fieldCount = context.fieldCount
        offsets = context.offsets
        textIsValidated = context.textIsValidated
        functions = context.functions
        self.handle = handle
        self.base = base
        self.count = count
    }

    @inlinable @inline(__always)
    func check(_ position: Int) throws {
        guard position >= 0, position < fieldCount else { throw context.outOfRange(position) }
    }

    /// The declared type of field `position`, checked to be `type` or `other`.
    @inlinable @inline(__always) @discardableResult
    func check(_ position: Int, _ type: FieldType, or other: FieldType) throws -> FieldType {
        guard position >= 0, position < fieldCount else { throw context.outOfRange(position) }
        let declared = types[position]
        guard declared == type || declared == other else { throw context.wrongType(position, type, other) }
        return declared
    }

    /// The engine's value of column `position` and its storage class; NULL
    /// is an error.
    @usableFromInline
    func column(_ position: Int) throws -> (OpaquePointer?, Int32, UnsafePointer<ColumnFunctions>) {
        guard let functions else { throw context.damaged(position) }
        let value = functions.pointee.value(handle, Int32(position))
        let type = functions.pointee.valueType(value)
        if type == functions.pointee.nullType { throw context.null(position) }
        return (value, type, functions)
    }

    /// Whether field `position` holds `nil`.
    /// - Throws: ``StorageError`` for a position out of range.
    public func isNull(_ position: Int) throws -> Bool {
        try check(position)
        switch kind {
        case .columns:
            guard let functions else { return false }
            return functions.pointee.type(handle, Int32(position)) == functions.pointee.nullType
        case .packed:
            return offsets[position] < 0
        case .cells:
            return context.cells[position].tag == nil
        }
    }

    /// The integer of field `position`, an integer or boolean field (a
    /// boolean reads as 0 or 1).
    /// - Throws: ``StorageError``: the field is of another type or `nil`, or
    ///   its stored value is damaged.
    @inlinable
    public func integer(_ position: Int) throws -> Int64 {
        let type = try check(position, .integer, or: .bool)
        // A packed value's integer of one byte (or boolean), read here; the
        // rest below.
        if kind == .packed, let base {
            var at = offsets[position]
            if at >= 0, at < count {
                var byte = base.load(fromByteOffset: at, as: UInt8.self)
                if type == .bool { return byte != 0 ? 1 : 0 }
                // A zigzag varint, to its last byte (below 0x80) within
                // the value and 64 bits.
                var raw = UInt64(byte & 0x7F)
                var shift: UInt64 = 0
                while byte >= 0x80 {
                    at += 1
                    shift += 7
                    guard at < count, shift < 64 else { return try integer(position, type) }
                    byte = base.load(fromByteOffset: at, as: UInt8.self)
                    raw |= UInt64(byte & 0x7F) << shift
                }
                return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
            }
        } else if kind == .columns, let functions {
            // An engine's integer column, read here; NULL and other storage
            // classes below.
            let value = functions.pointee.value(handle, Int32(position))
            if functions.pointee.valueType(value) == functions.pointee.integerType {
                let integer = functions.pointee.valueInt64(value)
                return type == .bool ? (integer != 0 ? 1 : 0) : integer
            }
        }
        return try integer(position, type)
    }

    @usableFromInline
    func integer(_ position: Int, _ type: FieldType) throws -> Int64 {
        switch kind {
        case .columns:
            let (value, storageClass, functions) = try column(position)
            guard storageClass == functions.pointee.integerType else { throw context.classError(position, storageClass) }
            let integer = functions.pointee.valueInt64(value)
            // A boolean reads as 0 or 1, as `decode(Bool.self)` reads it.
            return type == .bool ? (integer != 0 ? 1 : 0) : integer
        case .packed:
            let at = try context.packedStart(position, count: count)
            guard let base else { throw context.damaged(position) }
            if type == .bool {
                guard at < count else { throw context.damaged(position) }
                return base.load(fromByteOffset: at, as: UInt8.self) != 0 ? 1 : 0
            }
            var cursor = at
            let raw = try context.varint(base, count, &cursor, position)
            return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
        case .cells:
            return Int64(bitPattern: try context.cell(position).word)
        }
    }

    /// The boolean of field `position`, a boolean field.
    /// - Throws: as ``integer(_:)``.
    @inlinable
    public func bool(_ position: Int) throws -> Bool {
        try check(position, .bool, or: .bool)
        return try integer(position) != 0
    }

    /// The double of field `position`, a real or date field (a date's
    /// seconds since 2001-01-01).
    /// - Throws: as ``integer(_:)``.
    @inlinable
    public func real(_ position: Int) throws -> Double {
        try check(position, .real, or: .date)
        if kind == .packed, let base {
            let at = offsets[position]
            if at >= 0, count - at >= 8 {
                return Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: at, as: UInt64.self)))
            }
        } else if kind == .columns, let functions {
            let value = functions.pointee.value(handle, Int32(position))
            let storageClass = functions.pointee.valueType(value)
            if storageClass == functions.pointee.realType || storageClass == functions.pointee.integerType {
                return functions.pointee.valueDouble(value)
            }
        }
        return try realSlow(position)
    }

    @usableFromInline
    func realSlow(_ position: Int) throws -> Double {
        switch kind {
        case .columns:
            let (value, storageClass, functions) = try column(position)
            // As `ColumnRowReader` reads a real: an integer is taken as its
            // value; a NaN is stored as a blob of its 8 bytes, big-endian.
            if storageClass == functions.pointee.realType || storageClass == functions.pointee.integerType {
                return functions.pointee.valueDouble(value)
            }
            if storageClass == functions.pointee.blobType, functions.pointee.valueBytes(value) == 8,
                let bytes = functions.pointee.valueBlob(value)
            {
                let real = Double(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
                if real.isNaN { return real }
            }
            throw context.classError(position, storageClass)
        case .packed:
            let at = try context.packedStart(position, count: count)
            guard let base, count - at >= 8 else { throw context.damaged(position) }
            return Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: at, as: UInt64.self)))
        case .cells:
            return Double(bitPattern: try context.cell(position).word)
        }
    }

    /// The date of field `position`, a date or real field.
    /// - Throws: as ``integer(_:)``.
    @inlinable
    public func date(_ position: Int) throws -> Date {
        Date(storedSeconds: try real(position))
    }

    /// The text of field `position`, a text field: a view of its UTF-8
    /// bytes where the engine keeps them, valid while this view is.
    /// - Throws: as ``integer(_:)``.
    @_lifetime(borrow self)
    @inlinable
    public func text(_ position: Int) throws -> UTF8Span {
        try check(position, .text, or: .text)
        let bytes: UnsafeRawBufferPointer
        // A packed value's text of fewer than 128 bytes whose checksum
        // matched, found here; the rest below.
        if kind == .packed, textIsValidated, let base, case let at = offsets[position],
            at >= 0, at < count, case let length = Int(base.load(fromByteOffset: at, as: UInt8.self)), length < 0x80,
            length <= count - at - 1
        {
            bytes = UnsafeRawBufferPointer(start: base + at + 1, count: length)
        } else {
            bytes = try self.bytes(at: position, blob: false)
        }
        let span = _overrideLifetime(Span<UInt8>(_unsafeBytes: bytes), borrowing: self)
        return UTF8Span(unchecked: span)
    }

    /// The bytes of field `position`, a bytes field, where the engine keeps
    /// them, valid while this view is.
    /// - Throws: as ``integer(_:)``.
    @_lifetime(borrow self)
    public func bytes(_ position: Int) throws -> RawSpan {
        try check(position, .blob, or: .blob)
        let bytes = try self.bytes(at: position, blob: true)
        return _overrideLifetime(RawSpan(_unsafeBytes: bytes), borrowing: self)
    }

    /// The bytes of a text or blob field; text checked to be valid UTF-8
    /// (or repaired into the context's memory) unless the source vouches
    /// for it.
    @usableFromInline
    func bytes(at position: Int, blob: Bool) throws -> UnsafeRawBufferPointer {
        switch kind {
        case .columns:
            let (value, storageClass, functions) = try column(position)
            if blob {
                guard storageClass == functions.pointee.blobType else { throw context.classError(position, storageClass) }
                let start = functions.pointee.valueBlob(value)
                return UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : Int(functions.pointee.valueBytes(value)))
            }
            guard storageClass == functions.pointee.textType, let text = functions.pointee.valueText(value) else {
                throw context.classError(position, storageClass)
            }
            return context.validated(UnsafeRawBufferPointer(start: text, count: Int(functions.pointee.valueBytes(value))))
        case .packed:
            var at = try context.packedStart(position, count: count)
            guard let base else { throw context.damaged(position) }
            let length = try context.varint(base, count, &at, position)
            guard length <= UInt64(count - at) else { throw context.damaged(position) }
            let bytes = UnsafeRawBufferPointer(start: base + at, count: Int(length))
            return blob || textIsValidated ? bytes : context.validated(bytes)
        case .cells:
            let cell = try context.cell(position)
            return UnsafeRawBufferPointer(start: base.map { $0 + Int(cell.word) }, count: cell.length)
        }
    }
}

/// What the views of one entity's records know of its fields: names and
/// types, in ``Entity/fields`` order. Made once per entity (an adapter keeps
/// it with its table) and shared by every read's ``ViewContext``, which
/// reads the types through a pointer (no array retained per field).
public final class ViewLayout: @unchecked Sendable {
    // @unchecked: `types` is written once, in `init`, and only read after.
    @usableFromInline let entity: String
    @usableFromInline let names: [String]
    @usableFromInline let types: UnsafeMutablePointer<FieldType>
    @usableFromInline let fieldCount: Int

    /// The layout of `entity`'s records.
    public init<R: Record>(_ entity: Entity<R>) {
        self.entity = entity.name
        names = entity.fields.map(\.name)
        fieldCount = entity.fields.count
        types = .allocate(capacity: max(fieldCount, 1))
        for (index, field) in entity.fields.enumerated() { (types + index).initialize(to: field.type) }
    }

    deinit {
        types.deallocate()
    }
}

/// What the views of one read share: where their fields come from, the
/// entity's field types, the errors, and the memory of text that had to be
/// repaired. Made by the adapter once per call; views hold it
/// `unowned(unsafe)`, so the adapter keeps it alive while it lends them.
public final class ViewContext {
    @usableFromInline package enum Kind { case columns, packed, cells }

    /// One field of a record read into cells (the storage read a record
    /// and lends a view of it): its integer or double bits, or where its
    /// bytes start in the scratch memory and how many there are.
    @usableFromInline package struct Cell {
        /// The value's storage class; `nil` for a field that holds `nil`.
        @usableFromInline var tag: FieldType?
        @usableFromInline var word: UInt64
        @usableFromInline var length: Int
    }

    // The state each accessor reads is in memory of the context's own and
    // in `let`s, or exempt from exclusivity checks (one read at a time
    // uses a context, on one thread): read through arrays and checked
    // `var`s, an accessor paid a retain, a release and an access check per
    // field, more than the field's own reading.
    @usableFromInline package let kind: Kind
    @usableFromInline let layout: ViewLayout
    @usableFromInline var entity: String { layout.entity }
    @usableFromInline var names: [String] { layout.names }
    /// The fields' declared types, and their number.
    @usableFromInline let types: UnsafeMutablePointer<FieldType>
    @usableFromInline let fieldCount: Int
    @usableFromInline let functions: UnsafePointer<ColumnFunctions>?
    @usableFromInline let columnAccess: ColumnAccess?
    @usableFromInline let packedAccess: PackedValueAccess?
    /// Each field's start in the current packed value, -1 for nil.
    @usableFromInline package let offsets: UnsafeMutablePointer<Int>
    @usableFromInline @exclusivity(unchecked) package var textIsValidated: Bool
    @usableFromInline @exclusivity(unchecked) var cells: [Cell] = []
    @exclusivity(unchecked) private var scratch: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var scratchCapacity = 0
    /// Repaired text of the current record, freed when the next is lent.
    @exclusivity(unchecked) private var repairs: [UnsafeMutableRawBufferPointer] = []
    @usableFromInline @exclusivity(unchecked) var repairCount = 0

    private init(
        kind: Kind, layout: ViewLayout, functions: UnsafePointer<ColumnFunctions>?, columnAccess: ColumnAccess?,
        packedAccess: PackedValueAccess?, offsets: UnsafeMutablePointer<Int>?, textIsValidated: Bool
    ) {
        self.kind = kind
        self.layout = layout
        fieldCount = layout.fieldCount
        types = layout.types
        self.functions = functions
        self.columnAccess = columnAccess
        self.packedAccess = packedAccess
        if let offsets {
            self.offsets = offsets
            ownsOffsets = false
        } else {
            self.offsets = .allocate(capacity: max(layout.fieldCount, 1))
            ownsOffsets = true
        }
        self.textIsValidated = textIsValidated
    }

    private let ownsOffsets: Bool

    /// The context of views of an engine's rows, one column per field in
    /// the entity's order, read with `functions` (which the caller keeps
    /// alive) and its errors made by `access`.
    package convenience init(columnsOf layout: ViewLayout, functions: UnsafePointer<ColumnFunctions>, access: ColumnAccess) {
        self.init(
            kind: .columns, layout: layout, functions: functions, columnAccess: access, packedAccess: nil, offsets: nil,
            textIsValidated: false)
    }

    /// The context of views of values in the packed format
    /// (``PackedFieldReader``), whose fields' starts the adapter lays out
    /// into `offsets` (-1 for nil) before it lends each view; `access`
    /// makes the errors. `textIsValidated`: the values' text is known to be
    /// valid UTF-8 (``UTF8Text/string(validated:)``).
    package convenience init(
        packedOf layout: ViewLayout, offsets: UnsafeMutablePointer<Int>, access: PackedValueAccess,
        textIsValidated: Bool
    ) {
        self.init(
            kind: .packed, layout: layout, functions: nil, columnAccess: nil, packedAccess: access, offsets: offsets,
            textIsValidated: textIsValidated)
    }

    /// The context of views of records read whole (the default
    /// `forEachView(_:_:)`): ``lend(_:of:to:)`` puts each record's
    /// fields into cells.
    public convenience init(recordsOf layout: ViewLayout) {
        self.init(
            kind: .cells, layout: layout, functions: nil, columnAccess: nil, packedAccess: nil, offsets: nil,
            textIsValidated: true)
    }

    deinit {
        releaseRepairs()
        scratch?.deallocate()
        if ownsOffsets { offsets.deallocate() }
    }

    /// Lets go of what the last record's views needed (repaired text);
    /// called before each record is lent.
    @inlinable
    package func nextRecord() {
        if repairCount > 0 { releaseRepairs() }
    }

    /// ``nextRecord()`` for a packed value, saying whether its text is
    /// known to be valid UTF-8.
    @inlinable
    package func nextRecord(textIsValidated: Bool) {
        if repairCount > 0 { releaseRepairs() }
        self.textIsValidated = textIsValidated
    }

    @usableFromInline func releaseRepairs() {
        for repair in repairs { repair.deallocate() }
        repairs.removeAll(keepingCapacity: true)
        repairCount = 0
    }

    /// Lends a view of `record`'s fields to `body`.
    /// - Throws: what `body` throws.
    public func lend<R: Record>(
        _ record: borrowing R, of entity: Entity<R>, to body: (borrowing RecordView<R>) throws -> Void
    ) throws {
        nextRecord()
        var values: [StoredValue] = []
        values.reserveCapacity(entity.fields.count)
        var bytes = 0
        for field in entity.fields {
            let value = field.value(in: record)
            switch value {
            case .text(let text): bytes += text.utf8.count
            case .blob(let blob): bytes += blob.count
            default: break
            }
            values.append(value)
        }
        if bytes > scratchCapacity {
            scratch?.deallocate()
            scratch = .allocate(byteCount: bytes, alignment: 8)
            scratchCapacity = bytes
        }
        cells.removeAll(keepingCapacity: true)
        var at = 0
        for value in values {
            switch value {
            case .null:
                cells.append(Cell(tag: nil, word: 0, length: 0))
            case .integer(let integer):
                cells.append(Cell(tag: .integer, word: UInt64(bitPattern: integer), length: 0))
            case .real(let real):
                cells.append(Cell(tag: .real, word: real.bitPattern, length: 0))
            case .text(let text):
                let count = copyBytes(of: text.utf8, at: at)
                cells.append(Cell(tag: .text, word: UInt64(at), length: count))
                at += count
            case .blob(let blob):
                let count = copyBytes(of: blob, at: at)
                cells.append(Cell(tag: .blob, word: UInt64(at), length: count))
                at += count
            }
        }
        let view = RecordView<R>(self, handle: nil, base: UnsafeRawPointer(scratch), count: at)
        try body(view)
    }

    private func copyBytes<C: Collection<UInt8>>(of bytes: C, at offset: Int) -> Int {
        guard let scratch else { return 0 }
        let target = UnsafeMutableRawBufferPointer(start: scratch + offset, count: scratchCapacity - offset)
        target.copyBytes(from: bytes)
        return bytes.count
    }

    // MARK: Checks and errors

    @usableFromInline
    func outOfRange(_ position: Int) -> StorageError {
        StorageError(
            .invalidArgument, .read, entity: entity,
            message: "field position \(position) is out of range: the record has \(fieldCount) fields")
    }

    @usableFromInline
    func wrongType(_ position: Int, _ type: FieldType, _ other: FieldType) -> StorageError {
        let asked = type == other ? "\(type)" : "\(type) or \(other)"
        return StorageError(
            .invalidArgument, .read, entity: entity,
            message: "field '\(names[position])' is declared \(types[position]), not read as \(asked)")
    }

    @usableFromInline
    func null(_ position: Int) -> StorageError {
        StorageError(
            .decoding, .read, entity: entity,
            message: "field '\(names[position])' is nil: ask isNull(_:) before reading an optional field")
    }

    @usableFromInline
    func damaged(_ position: Int) -> StorageError {
        if let packedAccess { return packedAccess.readError(.endsInside(field: position)) }
        return StorageError(.corrupt, .read, entity: entity, message: "field '\(names[position])' is damaged")
    }

    // MARK: Packed values

    /// Where field `position`'s value starts in the current packed value.
    @usableFromInline
    func packedStart(_ position: Int, count: Int) throws -> Int {
        let at = offsets[position]
        guard at >= 0 else { throw null(position) }
        guard at < count else { throw damaged(position) }
        return at
    }

    @usableFromInline
    func varint(_ base: UnsafeRawPointer, _ count: Int, _ at: inout Int, _ position: Int) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard at < count, shift < 64 else { throw damaged(position) }
            let byte = base.load(fromByteOffset: at, as: UInt8.self)
            at += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// `bytes` when they are valid UTF-8; otherwise the text repaired as
    /// `String(decoding:as:)` repairs it, in memory kept until the next
    /// record is lent.
    @usableFromInline
    func validated(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        if UTF8Text.isValid(bytes) { return bytes }
        var repaired = String(decoding: bytes, as: UTF8.self)
        return repaired.withUTF8 { utf8 in
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(utf8.count, 1), alignment: 1)
            if let source = utf8.baseAddress, let target = copy.baseAddress {
                target.copyMemory(from: source, byteCount: utf8.count)
            }
            repairs.append(copy)
            repairCount += 1
            return UnsafeRawBufferPointer(start: copy.baseAddress, count: utf8.count)
        }
    }

    // MARK: Cells

    @usableFromInline
    func cell(_ position: Int) throws -> Cell {
        let cell = cells[position]
        guard cell.tag != nil else { throw null(position) }
        return cell
    }

    // MARK: Columns

    @usableFromInline
    func classError(_ position: Int, _ type: Int32) -> StorageError {
        guard let columnAccess else { return damaged(position) }
        return columnAccess.storageClassError(column: Int32(position), found: type)
    }
}

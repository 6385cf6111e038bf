import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@StoredRecord("notes", primaryKey: "id", indexes: […], ownedBy: …)` on a
/// struct: an extension that makes it a `Record` and a `FieldwiseRecord`, with
/// its `Entity` derived from its stored properties (the primary key first, then
/// the others in declaration order; `@Children` arrays as relations) and the
/// positional `init(fields:)` and `write(fields:)` in that same order.
public struct StoredRecordMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            throw DiagnosticsError(diagnostics: [
                Diagnostic(node: node, message: StoredRecordDiagnostic.notAStruct)
            ])
        }
        let arguments = try MacroArguments(node)
        let shape = try RecordShape(structDecl, primaryKeyName: arguments.primaryKey ?? "id", attribute: node)

        let typeName = structDecl.name.trimmedDescription
        let access = accessModifier(of: structDecl)
        let fieldList = shape.fields.map { "DAOCore.Field(\(literal($0.name)), \\.\($0.name))" }
        var entityArguments = [
            arguments.entityName,
            "primaryKey: \(literal(shape.primaryKey.name)), \\.\(shape.primaryKey.name)",
            "fields: [\(fieldList.joined(separator: ", "))]",
        ]
        if let indexes = arguments.indexes { entityArguments.append("indexes: \(indexes)") }
        if !shape.relations.isEmpty {
            let relationList = shape.relations.map {
                "DAOCore.Relation<\(typeName), \($0.childType)>(\(literal($0.name)), \\.\($0.name), foreignKey: \(literal($0.foreignKey)), \\.\($0.foreignKey))"
            }
            entityArguments.append("relations: [\(relationList.joined(separator: ", "))]")
        }
        if let owner = arguments.owner { entityArguments.append("ownedBy: \(owner)") }

        let stored = [shape.primaryKey] + shape.fields
        let reads = stored.map {
            "self.\($0.name) = try fields.\($0.isOptional ? "decodeIfPresent" : "decode")()"
        }
            + shape.relations.map { "self.\($0.name) = []" }
        let writes = stored.map { "try fields.encode(self.\($0.name))" }

        var members: [String] = []
        if !shape.declaresPrimaryKeyType {
            members.append("\(access)typealias PrimaryKey = \(shape.primaryKey.type)")
        }
        members.append(
            """
            /// `\(arguments.entityName.trimmingQuotes)`: the fields of the stored properties, primary key first.
            \(access)static let entity = DAOCore.Entity<\(typeName)>(
                \(entityArguments.joined(separator: ",\n    "))
            )
            """)
        members.append(
            """
            /// Reads the fields in the order of ``entity``; relations start empty and the storage fills them.
            \(access)init(fields: inout some DAOCore.FieldReader) throws {
                \(reads.joined(separator: "\n    "))
            }
            """)
        members.append(
            """
            /// Writes the fields in the order of ``entity``; the storage writes the relations.
            \(access)func write(fields: inout some DAOCore.FieldWriter) throws {
                \(writes.joined(separator: "\n    "))
            }
            """)

        let conformances = protocols.map(\.trimmedDescription)
        let inheritance = conformances.isEmpty ? "" : ": " + conformances.joined(separator: ", ")
        let source = "extension \(type.trimmedDescription)\(inheritance) {\n\(members.joined(separator: "\n\n"))\n}"
        let decl = DeclSyntax(stringLiteral: source)
        guard let extensionDecl = decl.as(ExtensionDeclSyntax.self) else { return [] }
        return [extensionDecl]
    }

    private static func literal(_ text: String) -> String {
        StringLiteralExprSyntax(content: text).description
    }

    private static func accessModifier(of decl: StructDeclSyntax) -> String {
        for modifier in decl.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }
}

/// `@Children(foreignKey: "authorId")` on an array of child records: the
/// relation is declared by `@StoredRecord`; this attribute itself adds nothing.
public struct ChildrenMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// The arguments of `@StoredRecord`, as source text.
struct MacroArguments {
    var entityName: String
    var primaryKey: String?
    var indexes: String?
    var owner: String?

    init(_ node: AttributeSyntax) throws {
        guard let list = node.arguments?.as(LabeledExprListSyntax.self),
              let first = list.first, first.label == nil
        else {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: node, message: StoredRecordDiagnostic.missingEntityName)])
        }
        entityName = first.expression.trimmedDescription
        for argument in list.dropFirst() {
            switch argument.label?.text {
            case "primaryKey":
                guard let name = argument.expression.as(StringLiteralExprSyntax.self)?.plainText else {
                    throw DiagnosticsError(diagnostics: [
                        Diagnostic(node: argument.expression, message: StoredRecordDiagnostic.primaryKeyNotALiteral)
                    ])
                }
                primaryKey = name
            case "indexes":
                indexes = argument.expression.trimmedDescription
            case "ownedBy":
                owner = argument.expression.trimmedDescription
            default:
                // The compiler has already checked the labels against the declaration.
                continue
            }
        }
    }
}

extension StringLiteralExprSyntax {
    /// The literal's text when it has no interpolation.
    var plainText: String? {
        var text = ""
        for segment in segments {
            guard let part = segment.as(StringSegmentSyntax.self) else { return nil }
            text += part.content.text
        }
        return text
    }
}

extension String {
    var trimmingQuotes: String {
        var text = self
        if text.hasPrefix("\"") { text.removeFirst() }
        if text.hasSuffix("\"") { text.removeLast() }
        return text
    }
}

/// One stored property.
struct StoredProperty {
    var name: String
    var type: String

    /// Whether the type is spelled as an optional (`T?`, `T!`, `Optional<T>`).
    var isOptional: Bool {
        let type = type.trimmingCharacters(in: " ")
        return type.hasSuffix("?") || type.hasSuffix("!") || type.hasPrefix("Optional<")
    }
}

/// One `@Children` property.
struct ChildRelation {
    var name: String
    var childType: String
    var foreignKey: String
}

/// The stored shape of a struct, read from its members.
struct RecordShape {
    var primaryKey: StoredProperty
    var fields: [StoredProperty] = []
    var relations: [ChildRelation] = []
    var declaresPrimaryKeyType = false

    init(_ decl: StructDeclSyntax, primaryKeyName: String, attribute: AttributeSyntax) throws {
        var diagnostics: [Diagnostic] = []
        var stored: [StoredProperty] = []
        var relations: [ChildRelation] = []
        for member in decl.memberBlock.members {
            if let alias = member.decl.as(TypeAliasDeclSyntax.self), alias.name.text == "PrimaryKey" {
                declaresPrimaryKeyType = true
            }
            if let nested = member.decl.asProtocol((any NamedDeclSyntax).self), nested.name.text == "CodingKeys",
               !member.decl.is(VariableDeclSyntax.self)
            {
                diagnostics.append(Diagnostic(node: nested.name, message: StoredRecordDiagnostic.customCodingKeys))
            }
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            if variable.modifiers.contains(where: { [.keyword(.static), .keyword(.class)].contains($0.name.tokenKind) }) {
                continue
            }
            let isLazy = variable.modifiers.contains { $0.name.tokenKind == .keyword(.lazy) }
            let children = variable.attributes.lazy.compactMap { $0.as(AttributeSyntax.self) }
                .first { $0.attributeName.trimmedDescription == "Children" }
            for binding in variable.bindings {
                guard isStored(binding) else {
                    if let children {
                        diagnostics.append(Diagnostic(node: children, message: StoredRecordDiagnostic.childrenNotStored))
                    }
                    continue
                }
                guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
                    diagnostics.append(Diagnostic(node: binding.pattern, message: StoredRecordDiagnostic.notAName))
                    continue
                }
                let name = pattern.identifier.text.trimmingCharacters(in: "`")
                if isLazy {
                    diagnostics.append(Diagnostic(node: variable, message: StoredRecordDiagnostic.lazy(name)))
                    continue
                }
                if variable.bindingSpecifier.tokenKind == .keyword(.let), binding.initializer != nil {
                    diagnostics.append(Diagnostic(node: binding, message: StoredRecordDiagnostic.letWithValue(name)))
                    continue
                }
                guard let type = binding.typeAnnotation?.type ?? variable.bindings.last?.typeAnnotation?.type else {
                    diagnostics.append(Diagnostic(node: binding, message: StoredRecordDiagnostic.noType(name)))
                    continue
                }
                if let children {
                    guard let element = arrayElement(of: type) else {
                        diagnostics.append(Diagnostic(node: type, message: StoredRecordDiagnostic.childrenNotArray(name)))
                        continue
                    }
                    guard let foreignKey = foreignKey(of: children) else {
                        diagnostics.append(Diagnostic(node: children, message: StoredRecordDiagnostic.childrenForeignKey))
                        continue
                    }
                    relations.append(ChildRelation(name: name, childType: element.trimmedDescription, foreignKey: foreignKey))
                    continue
                }
                if let problem = unstorable(type) {
                    diagnostics.append(Diagnostic(node: type, message: StoredRecordDiagnostic.unstorable(name, problem)))
                    continue
                }
                stored.append(StoredProperty(name: name, type: type.trimmedDescription))
            }
        }
        guard let keyPosition = stored.firstIndex(where: { $0.name == primaryKeyName }) else {
            if relations.contains(where: { $0.name == primaryKeyName }) {
                diagnostics.append(Diagnostic(node: attribute, message: StoredRecordDiagnostic.keyIsRelation(primaryKeyName)))
            } else if diagnostics.isEmpty {
                diagnostics.append(Diagnostic(node: attribute, message: StoredRecordDiagnostic.noPrimaryKey(primaryKeyName)))
            }
            throw DiagnosticsError(diagnostics: diagnostics)
        }
        let key = stored.remove(at: keyPosition)
        if key.isOptional {
            diagnostics.append(Diagnostic(node: attribute, message: StoredRecordDiagnostic.optionalKey(key.name)))
        }
        if !diagnostics.isEmpty { throw DiagnosticsError(diagnostics: diagnostics) }
        primaryKey = key
        fields = stored
        self.relations = relations
    }
}

/// Whether a binding is a stored property: no accessors but observers.
private func isStored(_ binding: PatternBindingSyntax) -> Bool {
    guard let block = binding.accessorBlock else { return true }
    switch block.accessors {
    case .getter:
        return false
    case .accessors(let accessors):
        return accessors.allSatisfy {
            [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind)
        }
    }
}

/// The element type of `[T]` or `Array<T>`.
private func arrayElement(of type: TypeSyntax) -> TypeSyntax? {
    if let array = type.as(ArrayTypeSyntax.self) { return array.element }
    if let generic = type.as(IdentifierTypeSyntax.self), generic.name.text == "Array",
       let argument = generic.genericArgumentClause?.arguments.first, generic.genericArgumentClause?.arguments.count == 1
    {
        return TypeSyntax(argument.argument.as(TypeSyntax.self))
    }
    return nil
}

/// Why a property's type cannot be one stored field, when that shows in its
/// syntax; `nil` when it may be (the compiler then checks that it conforms to
/// `FieldValue`).
private func unstorable(_ type: TypeSyntax) -> String? {
    if let optional = type.as(OptionalTypeSyntax.self) { return unstorable(optional.wrappedType) }
    if let optional = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return unstorable(optional.wrappedType) }
    if let attributed = type.as(AttributedTypeSyntax.self) { return unstorable(attributed.baseType) }
    if type.is(ArrayTypeSyntax.self) || arrayElement(of: type) != nil {
        return "an array is not one field; mark an array of child records @Children(foreignKey:), store bytes as Data"
    }
    if type.is(DictionaryTypeSyntax.self) { return "a dictionary is not one field" }
    if let tuple = type.as(TupleTypeSyntax.self) {
        if tuple.elements.count == 1, let only = tuple.elements.first { return unstorable(only.type) }
        return "a tuple is not one field"
    }
    if type.is(FunctionTypeSyntax.self) { return "a function cannot be stored" }
    if type.is(SomeOrAnyTypeSyntax.self) { return "an existential or opaque type has no storage class" }
    if type.is(MetatypeTypeSyntax.self) { return "a metatype cannot be stored" }
    if let identifier = type.as(IdentifierTypeSyntax.self) {
        switch identifier.name.text {
        case "Any", "AnyObject": return "'\(identifier.name.text)' has no storage class"
        case "Set", "Dictionary": return "a collection is not one field"
        case "Optional":
            if let argument = identifier.genericArgumentClause?.arguments.first?.argument.as(TypeSyntax.self) {
                return unstorable(argument)
            }
        default: break
        }
    }
    return nil
}

/// The `foreignKey:` string of `@Children(foreignKey: "…")`.
private func foreignKey(of attribute: AttributeSyntax) -> String? {
    guard let list = attribute.arguments?.as(LabeledExprListSyntax.self) else { return nil }
    for argument in list where argument.label?.text == "foreignKey" {
        return argument.expression.as(StringLiteralExprSyntax.self)?.plainText
    }
    return nil
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}

/// What `@StoredRecord` and `@Children` refuse, at compile time.
enum StoredRecordDiagnostic: DiagnosticMessage {
    case notAStruct
    case missingEntityName
    case primaryKeyNotALiteral
    case customCodingKeys
    case childrenNotStored
    case notAName
    case lazy(String)
    case letWithValue(String)
    case noType(String)
    case childrenNotArray(String)
    case childrenForeignKey
    case unstorable(String, String)
    case noPrimaryKey(String)
    case keyIsRelation(String)
    case optionalKey(String)

    var message: String {
        switch self {
        case .notAStruct:
            "@StoredRecord applies to a struct"
        case .missingEntityName:
            "@StoredRecord needs the entity's name first: @StoredRecord(\"notes\")"
        case .primaryKeyNotALiteral:
            "primaryKey: must be a string literal naming a stored property"
        case .customCodingKeys:
            "@StoredRecord names each field after its property; a custom CodingKeys would store it under another name"
        case .childrenNotStored:
            "@Children applies to a stored property"
        case .notAName:
            "@StoredRecord stores properties bound to one name; split this pattern into one property per name"
        case .lazy(let name):
            "'\(name)' is lazy; a stored field must be a plain stored property"
        case .letWithValue(let name):
            "'\(name)' is a 'let' with an initial value, so it cannot be read back; make it 'var' or computed"
        case .noType(let name):
            "'\(name)' needs a type annotation: @StoredRecord reads a field's type from it"
        case .childrenNotArray(let name):
            "@Children property '\(name)' must be an array of child records, such as [BookRecord]"
        case .childrenForeignKey:
            "@Children needs the child's foreign key field as a string literal: @Children(foreignKey: \"authorId\")"
        case .unstorable(let name, let problem):
            "'\(name)' cannot be a stored field: \(problem)"
        case .noPrimaryKey(let name):
            "no stored property '\(name)' for the primary key; name another with @StoredRecord(_:primaryKey:)"
        case .keyIsRelation(let name):
            "the primary key '\(name)' is a @Children relation, not a field"
        case .optionalKey(let name):
            "the primary key '\(name)' cannot be optional"
        }
    }

    var diagnosticID: MessageID {
        MessageID(domain: "DAOMacros", id: "\(self)".prefix { $0 != "(" }.description)
    }

    var severity: DiagnosticSeverity { .error }
}

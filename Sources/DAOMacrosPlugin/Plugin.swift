import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin behind DAOMacros.
@main
struct DAOMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [StoredRecordMacro.self, ChildrenMacro.self]
}

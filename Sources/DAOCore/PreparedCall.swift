import Foundation
import Synchronization

/// A prepared entry for the prepared query's own calls, in terms that do not
/// depend on the record type: code not specialized for it (an adapter's)
/// finds and binds it without looking up generic metadata (about 330
/// instructions each; the generic entry's search and binding looked up about
/// ten a call).
final class CallPlan: Sendable {
    let generation: Int
    /// The parameter slots, the parameter each is filled from, and the kind
    /// of value each was made for.
    let slots: [Int]
    let parameters: [Int]
    let classes: [ConstantClass]
    let constants: [StoredValue]
    /// The slots whose constants must be text (``ExpressionTemplate/fits(_:)``).
    let textSlots: [Int]
    let access: AccessValues
    /// The template's ``PlanTemplate/otherEqualities``.
    let otherEqualities: [OtherEquality]?
    /// The ``PlanTemplate`` of the record type; `nil`: values of these kinds
    /// are planned afresh.
    let template: (AnyObject & Sendable)?

    init<R: Record>(_ entry: PreparedEntry<R>) {
        generation = entry.generation
        slots = entry.parameterSlots.map(\.slot)
        parameters = entry.parameterSlots.map(\.parameter)
        classes = entry.classes
        constants = entry.constants
        if entry.shaped, let template = entry.template, let expression = template.expression {
            textSlots = expression.textSlots
            access = template.access
            otherEqualities = template.otherEqualities
            self.template = template
        } else {
            textSlots = []
            access = .all
            otherEqualities = nil
            template = nil
        }
    }

    /// Whether `values` are of the kinds this entry was made for.
    func accepts(_ values: [StoredValue]) -> Bool {
        for index in slots.indices where ConstantClass(values[parameters[index]]) != classes[index] { return false }
        return true
    }

    /// The entry's constants with each parameter slot holding this call's
    /// value; `nil` when they do not fit the template (a text operation's
    /// constant that is not text).
    func constants(with values: [StoredValue]) -> [StoredValue]? {
        var constants = self.constants
        for index in slots.indices { constants[slots[index]] = values[parameters[index]] }
        for slot in textSlots {
            guard case .text = constants[slot] else { return nil }
        }
        return constants
    }

    /// The access path for this call's values: ``constants(with:)`` bound
    /// to ``access``, without the constants' array made when no text
    /// operation needs checking (the usual case: the array was a copy of
    /// every constant per call).
    func access(with values: [StoredValue]) -> AccessPath? {
        guard textSlots.isEmpty else { return constants(with: values).flatMap { access.instantiate($0) } }
        return access.instantiate { slot in
            for index in slots.indices where slots[index] == slot { return values[parameters[index]] }
            return constants[slot]
        }
    }

    /// The template's other equalities (``PlanTemplate/otherEqualities``)
    /// with this call's values; `nil` when it has none, or a value does not
    /// coerce to its field (or does not fit the template).
    func otherEqualities(with values: [StoredValue]) -> [(field: String, value: StoredValue)]? {
        guard let otherEqualities else { return nil }
        var bound: [(field: String, value: StoredValue)] = []
        bound.reserveCapacity(otherEqualities.count)
        if !textSlots.isEmpty {
            guard let constants = constants(with: values) else { return nil }
            for equality in otherEqualities {
                guard let value = equality.value.value({ constants[$0] }) else { return nil }
                bound.append((equality.field, value))
            }
            return bound
        }
        for equality in otherEqualities {
            let value = equality.value.value { slot in
                for index in slots.indices where slots[index] == slot { return values[parameters[index]] }
                return constants[slot]
            }
            guard let value else { return nil }
            bound.append((equality.field, value))
        }
        return bound
    }
}

/// The parameter variables of a prepared predicate and one call's values of
/// them, in stored form.
struct ParameterValues {
    let keys: [PredicateExpressions.VariableID]
    let values: [StoredValue]
}

/// One call of a prepared predicate: its values, in stored form for the
/// planner and as Foundation bindings for the parts Foundation evaluates
/// (``BoundCall``; this class itself binds nothing: the preparation's plan
/// with every parameter `nil`, which evaluates nothing).
///
/// `@unchecked Sendable`: not final, for ``BoundCall``; its stored properties
/// and its subclass's are constants of `Sendable` types.
class PreparedCall<R: Record>: @unchecked Sendable {
    let prepared: PreparedPredicate<R>
    let values: [StoredValue]

    init(prepared: PreparedPredicate<R>, values: [StoredValue]) {
        self.prepared = prepared
        self.values = values
    }

    /// The record and the parameters bound, for Foundation's evaluation.
    func bindings(_ record: R) -> PredicateBindings {
        PredicateBindings()
    }

    /// The value of the parameter variable `key`, or `nil` when `key` is no
    /// parameter.
    func value(of key: PredicateExpressions.VariableID) -> StoredValue? {
        guard let position = prepared.parameters.firstIndex(of: key) else { return nil }
        return values[position]
    }

    var parameterValues: ParameterValues { ParameterValues(keys: prepared.parameters, values: values) }

    /// The translation context of the prepared expression with these values.
    func context(record input: PredicateExpressions.Variable<R>) -> TranslationContext<R> {
        TranslationContext(input, key: prepared.record, call: self)
    }
}

/// A call of a prepared query with its parameters' values, in their own
/// types for Foundation and in stored form for the planner.
final class BoundCall<R: Record, Parameters: Sendable>: PreparedCall<R>, @unchecked Sendable {
    let parameters: Parameters
    private let makeBindings: @Sendable (R, Parameters) -> PredicateBindings

    init(
        prepared: PreparedPredicate<R>, values: [StoredValue], parameters: Parameters,
        bindings: @escaping @Sendable (R, Parameters) -> PredicateBindings
    ) {
        self.parameters = parameters
        makeBindings = bindings
        super.init(prepared: prepared, values: values)
    }

    override func bindings(_ record: R) -> PredicateBindings {
        makeBindings(record, parameters)
    }
}

/// The expression of a prepared predicate bound to one call's values: the
/// whole of the `Predicate<Record>` a ``PreparedQuery`` hands to a storage.
/// The planner recognizes it and plans the prepared expression; Foundation
/// evaluates it as the prepared predicate with the values bound.
struct PreparedCondition<R: Record>: StandardPredicateExpression {
    typealias Output = Bool

    let record: PredicateExpressions.Variable<R>
    let call: PreparedCall<R>

    init(record: PredicateExpressions.Variable<R>, call: PreparedCall<R>) {
        self.record = record
        self.call = call
    }

    func evaluate(_ bindings: PredicateBindings) throws -> Bool {
        let value = try record.evaluate(bindings)
        return try call.prepared.expression.evaluate(call.bindings(value))
    }

    /// The call of `predicate`, when it is a prepared predicate bound to values.
    /// The expression's type is compared first: a predicate that is not a
    /// prepared one, the usual case, costs no dynamic cast.
    static func call(of predicate: Predicate<R>) -> PreparedCall<R>? {
        let expression = predicate.expression
        guard type(of: expression) == PreparedCondition<R>.self else { return nil }
        return (expression as? PreparedCondition<R>)?.call
    }

    init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "a prepared query's predicate is not decodable"))
    }

    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(
            "prepared predicate",
            EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "a prepared query's predicate is not encodable"))
    }
}

/// A prepared call's template and the constants it binds, read by slot,
/// without building its condition (``PreparedQueryCall/boundSlots()``): for
/// an adapter of this package that derives, once per template, where each
/// of its engine's parameters comes from, and binds each call's values
/// straight from there (SQLite binds its kept statement's parameters so).
/// ``PreparedQueryCall/boundCondition()`` builds the same condition as a
/// ``QueryExpression``, which a call then compiles and lets go: about 4k
/// instructions and six allocations a call.
///
/// A value (the call's values and the entry it was planned from, held, not
/// copied): made and read by one call. Not generic: code not specialized
/// for the record type looked a generic struct's metadata up wherever it
/// handled one (about 340 instructions each, twice a call); the template's
/// class is the caller's to name (`unsafeDowncast(_:to:)`, which costs
/// nothing).
package struct BoundSlots {
    /// The ``PlanTemplate`` the call is bound to: an adapter keeps what it
    /// derives from it under it (``PlanTemplate/memo(_:_:)``).
    package let template: AnyObject & Sendable
    /// The maximum number of results, or `nil` for all of them.
    package let limit: Int?
    let entry: CallPlan
    let values: [StoredValue]

    init(template: AnyObject & Sendable, limit: Int?, entry: CallPlan, values: [StoredValue]) {
        self.template = template
        self.limit = limit
        self.entry = entry
        self.values = values
    }

    /// Whether `template` (``template``) has a condition (`false`: every record).
    package func hasCondition<R: Record>(_ template: PlanTemplate<R>) -> Bool { template.expression != nil }

    /// The constant in `slot`: the call's value for a parameter's slot, the
    /// template's own constant otherwise.
    @inline(__always)
    package func constant(_ slot: Int) -> StoredValue {
        let slots = entry.slots
        for index in slots.indices where slots[index] == slot { return values[entry.parameters[index]] }
        return entry.constants[slot]
    }

    /// The engine condition of `template` (``template``) with the call's values, as
    /// ``BoundCondition/condition`` gives it (`nil`: every record, or a
    /// value that does not fit, which ``PreparedQueryCall/boundSlots()``
    /// has ruled out). It builds the expression: for what an adapter makes
    /// once per template.
    package func condition<R: Record>(_ template: PlanTemplate<R>) -> QueryExpression? {
        guard let expression = template.expression else { return nil }
        var constants = entry.constants
        for index in entry.slots.indices { constants[entry.slots[index]] = values[entry.parameters[index]] }
        return expression.instantiateExpression(constants)
    }

    /// The constants of ``condition(_:)``, in the order it holds them (depth
    /// first, left operand first), each by its slot; empty without a
    /// condition. A comparison with NaN (a constant in the condition) and
    /// the NaN members of an `isIn` (dropped) hold none. The same for every
    /// call of the template: its values are of the kinds it was made for.
    package func conditionLeaves<R: Record>(_ template: PlanTemplate<R>) -> [ConditionLeaf] {
        var leaves: [ConditionLeaf] = []
        if let expression = template.expression { appendLeaves(expression, to: &leaves) }
        return leaves
    }

    private func appendLeaves<R: Record>(_ expression: ExpressionTemplate<R>, to leaves: inout [ConditionLeaf]) {
        switch expression {
        case .constant, .isTrue:
            return
        case .compare(_, let comparison, _, let slot):
            if case .real(let real) = constant(slot), real.isNaN { return }
            leaves.append(.compare(comparison, slot: slot))
        case .contains(_, let slot):
            leaves.append(.contains(slot: slot))
        case .hasPrefix(_, let slot):
            leaves.append(.hasPrefix(slot: slot))
        case .isIn(_, let count, let slot):
            for member in slot..<(slot + count) {
                if case .real(let real) = constant(member), real.isNaN { continue }
                leaves.append(.member(slot: member))
            }
        case .and(let lhs, let rhs), .or(let lhs, let rhs):
            appendLeaves(lhs, to: &leaves)
            appendLeaves(rhs, to: &leaves)
        case .not(let wrapped):
            appendLeaves(wrapped, to: &leaves)
        }
    }
}

/// A constant of a bound condition (``BoundSlots/conditionLeaves``): the
/// node that holds it and its slot. The condition holds a comparison's and
/// a member's value `-0.0` as `0.0` (``StoredValue/zeroNormalized``), a
/// text operation's as it is.
package enum ConditionLeaf: Sendable, Equatable {
    case compare(QueryExpression.Comparison, slot: Int)
    case contains(slot: Int)
    case hasPrefix(slot: Int)
    case member(slot: Int)
}

extension PreparedQueryCall {
    /// The call bound to the template the prepared query keeps for values
    /// of these kinds, read by slot (``BoundSlots``): `nil` exactly when
    /// ``boundCondition()`` is `nil` (no template, or a value that does not
    /// fit it), without building the condition.
    package func boundSlots() -> BoundSlots? {
        guard let entry = callEntry, let kept = entry.template else { return nil }
        let slots = BoundSlots(template: kept, limit: limit, entry: entry, values: call.values)
        for slot in entry.textSlots {
            guard case .text = slots.constant(slot) else { return nil }
        }
        return slots
    }
}

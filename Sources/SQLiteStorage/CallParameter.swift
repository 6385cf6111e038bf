import DAOCore

/// Where one parameter of a prepared call's `WHERE` text comes from: a
/// constant of the call's template, by slot (``BoundSlots``), bound as the
/// compiled condition binds it. Derived once per template from the first
/// call (``parameters(_:of:compiled:)``), so that each call binds its values
/// straight into the kept statement, as a hand-written prepared statement
/// is bound: no condition built, compiled and let go per call.
enum CallParameter: Sendable, Equatable {
    /// The constant, `-0.0` as `0.0` (as the condition holds a comparison's
    /// or a member's value; a text operation's is text).
    case value(slot: Int)
    /// The bound just above a `hasPrefix` constant's matches: its UTF-8
    /// bytes with the last one raised by one.
    case prefixEnd(slot: Int)

    /// Where each parameter of `bound`'s compiled condition comes from,
    /// given the parameters `compiled` of its first call: `nil` when they
    /// do not line up (the condition is then compiled on every call,
    /// through the call's query). What the compiler binds follows from the
    /// condition's nodes and the kinds of their constants
    /// (``PredicateSQL/shapeParameters(_:)``), which every call of a
    /// template shares; the check against the first call's own parameters
    /// makes sure of it.
    static func parameters<R: Record>(
        _ bound: BoundSlots, of template: PlanTemplate<R>, compiled: [SQLParameter]
    ) -> [CallParameter]? {
        var parameters: [CallParameter] = []
        for leaf in bound.conditionLeaves(template) {
            switch leaf {
            case .compare(let comparison, let slot):
                switch comparison {
                case .equal, .notEqual:
                    if bound.constant(slot) != .null { parameters.append(.value(slot: slot)) }
                case .less, .lessOrEqual, .greater, .greaterOrEqual:
                    parameters.append(.value(slot: slot))
                }
            case .contains(let slot):
                guard case .text(let text) = bound.constant(slot) else { return nil }
                if !text.isEmpty { parameters.append(.value(slot: slot)) }
            case .hasPrefix(let slot):
                guard case .text(let text) = bound.constant(slot) else { return nil }
                if !text.isEmpty {
                    parameters.append(.value(slot: slot))
                    parameters.append(.prefixEnd(slot: slot))
                }
            case .member(let slot):
                if bound.constant(slot) != .null { parameters.append(.value(slot: slot)) }
            }
        }
        guard parameters.count == compiled.count else { return nil }
        for (parameter, expected) in zip(parameters, compiled) where value(parameter, bound) != expected {
            return nil
        }
        return parameters
    }

    /// The parameter's value in `bound`'s call, as the compiled condition
    /// binds it; `nil` for a prefix that is not text.
    private static func value(_ parameter: CallParameter, _ bound: BoundSlots) -> SQLParameter? {
        switch parameter {
        case .value(let slot):
            return .value(bound.constant(slot).zeroNormalized)
        case .prefixEnd(let slot):
            guard case .text(let prefix) = bound.constant(slot) else { return nil }
            return .textBytes(prefixEnd(prefix))
        }
    }

    /// The UTF-8 bytes of `prefix`, not empty, with the last one raised by
    /// one (no byte of UTF-8 is 0xFF): what `compile` binds above a prefix.
    private static func prefixEnd(_ prefix: String) -> [UInt8] {
        var upper = Array(prefix.utf8)
        upper[upper.count - 1] += 1
        return upper
    }

    /// Binds `parameters` from `bound`'s call to `?1`, `?2`, … of
    /// `statement`; returns how many it bound. `entity` names the entity
    /// read in an error.
    static func bind(
        _ parameters: [CallParameter], of bound: BoundSlots, to statement: Statement, entity: String
    ) throws -> Int32 {
        var index: Int32 = 1
        for parameter in parameters {
            switch parameter {
            case .value(let slot):
                try statement.bind(bound.constant(slot).zeroNormalized, at: index)
            case .prefixEnd(let slot):
                guard case .text(let prefix) = bound.constant(slot), !prefix.isEmpty else {
                    throw StorageError(
                        .invalidArgument, .read, entity: entity,
                        message: "a prepared call's prefix is not the text its statement was made for")
                }
                try statement.bindTextBytes(prefixEnd(prefix), at: index)
            }
            index += 1
        }
        return Int32(parameters.count)
    }
}

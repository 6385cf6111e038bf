import DAOCore
import DialogGraph
import Foundation
import Testing

@Suite("Conformance: the query corpus itself")
struct CorpusTests {
    /// The queries expected to match nothing, on purpose.
    static let emptyOnPurpose: Set<String> = [
        "in an empty list", "constant false", "limit zero", "missing primary key",
    ]

    @Test("each query picks a proper, non-empty subset of the data, except those meant to be empty")
    func corpusIsSelective() throws {
        for entry in messageQueries {
            var unlimited = entry.query
            unlimited.limit = nil
            let count = try unlimited.apply(to: QueryTests.messages).count
            if Self.emptyOnPurpose.contains(entry.name) || entry.query.limit == 0 {
                #expect(try entry.query.apply(to: QueryTests.messages).isEmpty, "\(entry.name)")
            } else {
                #expect(count > 0, "\(entry.name) matches nothing")
                if entry.query.predicate != nil && !["constant true"].contains(entry.name) {
                    #expect(count < QueryTests.messages.count, "\(entry.name) matches everything")
                }
            }
        }
        for entry in userQueries {
            let count = try entry.query.apply(to: QueryTests.users).count
            #expect(count > 0 && count < QueryTests.users.count, "\(entry.name) matches \(count) of \(QueryTests.users.count)")
        }
    }

    @Test("the predicate translator pushes the workload query down exactly")
    func workloadQueryTranslates() {
        let predicate = #Predicate<MessageRecord> { $0.dialogId == 7 && !$0.isRead }
        let translation = QueryExpression.translate(predicate)
        #expect(translation.isExact)
        #expect(translation.expression == .and(.compare(field: "dialogId", .equal, .integer(7)), .not(.isTrue(field: "isRead"))))
        #expect(translation.expression.requiredEqualities.map(\.field) == ["dialogId", "isRead"])
    }

    @Test("a predicate with a computed part translates to an inexact superset")
    func partialTranslation() {
        let predicate = #Predicate<MessageRecord> { $0.dialogId == 4 && $0.senderId % 2 == 0 }
        let translation = QueryExpression.translate(predicate)
        #expect(!translation.isExact)
        #expect(translation.expression == .compare(field: "dialogId", .equal, .integer(4)))
        let opaque = QueryExpression.translate(#Predicate<MessageRecord> { $0.text.count > 3 || $0.isRead })
        #expect(opaque.expression == .constant(true))
        #expect(!opaque.isExact)
    }
}

import DAOCore
import Foundation

// Property lists only: refusing a second spelling of a canonically equivalent
// text (``DocumentTableState/texts``, ``DocumentTableState/suspects``).
extension DocumentTable {
    /// Counts the texts of `record` in ``DocumentTableState/texts`` and ``DocumentTableState/suspects``.
    func noteTexts(of record: R, mayHoldSuspects: Bool) {
        guard state.texts != nil || mayHoldSuspects else { return }
        for position in 0..<trackedTextFields.count {
            guard case .text(let text) = trackedTextFields[position].value(in: record) else { continue }
            if state.texts != nil { state.texts?[.text(text), default: 0] += 1 }
            if mayHoldSuspects && CanonicalText.isSuspect(text) {
                state.suspects[text, default: (Array(text.utf8), 0)].count += 1
            }
        }
    }

    /// Whether each of `records` holds a text that may change under NFC
    /// (``CanonicalText/isSuspect(_:)``).
    func holdSuspects(_ records: [R]) -> [Bool] {
        var holds: [Bool] = []
        holds.reserveCapacity(records.count)
        if let read = trackedTextsReader {
            // By position, without key paths. (A record whose
            // `write(fields:)` throws is read through the key paths below.)
            var texts: (firsts: [StoredValue], seconds: [StoredValue])?
            do {
                texts = try read(records)
            } catch {
                texts = nil
            }
            if let texts, texts.firsts.count == records.count {
                for index in 0..<records.count {
                    holds.append(
                        Self.isSuspect(texts.firsts[index])
                            || (index < texts.seconds.count && Self.isSuspect(texts.seconds[index])))
                }
                return holds
            }
        }
        let fieldCount = trackedTextFields.count
        for index in 0..<records.count {
            var any = false
            for position in 0..<fieldCount {
                if case .text(let text) = trackedTextFields[position].value(in: records[index]),
                    CanonicalText.isSuspect(text)
                {
                    any = true
                    break
                }
            }
            holds.append(any)
        }
        return holds
    }

    private static func isSuspect(_ value: StoredValue) -> Bool {
        if case .text(let text) = value { return CanonicalText.isSuspect(text) }
        return false
    }

    /// Checks that no text of `record` is canonically equivalent to a stored
    /// text (or another of its own) spelled otherwise; returns whether
    /// `record` may hold a text that is not in NFC.
    func checkSpellings(of record: R, key: StoredValue) throws -> Bool {
        if state.suspects.isEmpty {
            // Nothing stored may be spelled otherwise than in NFC: only a
            // record with a suspect text of its own can conflict (this is the
            // test below, done once per text instead of twice).
            var any = false
            for position in 0..<trackedTextFields.count {
                if case .text(let text) = trackedTextFields[position].value(in: record), CanonicalText.isSuspect(text) {
                    any = true
                    break
                }
            }
            guard any else { return false }
        }
        let old = self.record(key)
        var values: [(field: Field<R>, text: String)] = []
        for field in trackedTextFields {
            if case .text(let text) = field.value(in: record) { values.append((field, text)) }
        }
        let suspects = values.map { CanonicalText.isSuspect($0.text) }
        let recordHasSuspects = suspects.contains(true)
        for (position, value) in values.enumerated() {
            let suspect = suspects[position]
            // Two NFC texts are equivalent only when they are the same text.
            guard suspect || recordHasSuspects || !state.suspects.isEmpty else { continue }
            let scalars = Array(value.text.utf8)
            var conflict: [UInt8]?
            // Another field of this record.
            for other in values.indices where other < position && (suspect || suspects[other]) {
                let text = values[other].text
                if text == value.text && !text.utf8.elementsEqual(scalars) { conflict = Array(text.utf8) }
            }
            // A stored text that may not be in NFC, equivalent to this one.
            if conflict == nil, let stored = state.suspects[value.text],
                stored.scalars != scalars, !heldOnly(by: old, stored.scalars, count: stored.count)
            {
                conflict = stored.scalars
            }
            // The NFC spelling of this text, stored.
            if conflict == nil, suspect {
                let composed = value.text.precomposedStringWithCanonicalMapping
                if !composed.utf8.elementsEqual(scalars), let count = textCounts()[.text(composed)],
                    !heldOnly(by: old, Array(composed.utf8), count: count)
                {
                    conflict = Array(composed.utf8)
                }
            }
            guard let conflict else { continue }
            throw StorageError(
                .invalidArgument, .persist, entity: entityName,
                message: "field '\(value.field.name)' of record \(record.primaryKey) holds \(Self.scalars(value.text)), canonically equivalent to the stored \(Self.scalars(String(decoding: conflict, as: UTF8.self))) but spelled differently; a binary property list stores the two as one, so this store refuses it (use the JSON format, or normalize text)")
        }
        return recordHasSuspects
    }

    /// How many fields hold each text, built on first use.
    private func textCounts() -> [StoredValue: Int] {
        if let texts = state.texts { return texts }
        var texts: [StoredValue: Int] = [:]
        for record in allRecords {
            for field in trackedTextFields {
                if case .text(let text) = field.value(in: record) { texts[.text(text), default: 0] += 1 }
            }
        }
        state.texts = texts
        return texts
    }

    /// Whether the `count` fields that hold the text `scalars` are all fields of
    /// `old`, the version of the record being replaced.
    private func heldOnly(by old: R?, _ scalars: [UInt8], count: Int) -> Bool {
        guard let old else { return false }
        var held = 0
        for field in trackedTextFields {
            if case .text(let text) = field.value(in: old), text.utf8.elementsEqual(scalars) { held += 1 }
        }
        return held >= count
    }

    /// `text` as its Unicode scalars, `U+0065 U+0308`.
    private static func scalars(_ text: String) -> String {
        text.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }.joined(separator: " ")
    }

    /// Uncounts the texts of `record` (being replaced or removed).
    func forgetTexts(of record: R) {
        guard state.texts != nil || !state.suspects.isEmpty else { return }
        for position in 0..<trackedTextFields.count {
            guard case .text(let text) = trackedTextFields[position].value(in: record) else { continue }
            if let count = state.texts?[.text(text)] { state.texts?[.text(text)] = count > 1 ? count - 1 : nil }
            guard !state.suspects.isEmpty, CanonicalText.isSuspect(text), let stored = state.suspects[text],
                stored.scalars.elementsEqual(text.utf8)
            else { continue }
            if stored.count <= 1 { state.suspects[text] = nil } else { state.suspects[text]?.count -= 1 }
        }
    }
}

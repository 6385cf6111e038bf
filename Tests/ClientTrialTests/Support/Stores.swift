import DAOCore
import Foundation
import TestSupport
import Testing

// How the trial's tests open a domain's store: one function for every domain,
// which hands `body` the domain's DAOs or storages and closes the store after
// it (also when it throws), a failure to close being an issue of the test.

/// Opens `backend` in `directory`, runs `body` with what `make` builds over
/// the store (a domain's DAOs or storages), and closes the store (also when
/// `body` throws).
func withStore<Domain, T>(
    _ backend: TestBackend, in directory: URL, _ make: (any Store) throws -> Domain,
    _ body: (Domain, any MigratableStore) throws -> T
) throws -> T {
    let store = try backend.open(directory)
    defer { closeRecordingFailure(store, backend) }
    return try body(try make(store), store)
}

/// Closes `store`, recording a failure as an issue (for `defer`).
func closeRecordingFailure(_ store: any Store, _ backend: TestBackend) {
    do { try store.close() } catch { Issue.record("closing the \(backend.name) store failed: \(error)") }
}

/// Whether the property-list store is the backend: it refuses texts spelled
/// two ways in one entity's document, so a domain's data is generated in NFC.
func oneSpelling(_ backend: TestBackend) -> Bool { backend.name == "plist" }

import DAOCore
@testable import FileStorage
import Foundation
import Synchronization
import TestSupport
import Testing

/// Readers of a file store hold its state lock shared: a read answers while
/// another read is inside the lock, and while a commit encodes its
/// documents. Each read still answers one committed state. Serialized: the
/// gate of ``HeldNote`` is one for the process.
@Suite("File store: reads share the state lock", .serialized)
struct SharedReadsTests {
    typealias Outcome<Value: Sendable> = CommitReadersTests.Outcome<Value>
    typealias Gate = CommitReadersTests.Gate

    /// A record whose encoding can be held at a gate: the commit that
    /// encodes it waits there until the test opens it.
    struct HeldNote: Record, Equatable {
        typealias PrimaryKey = Int64
        var id: Int64
        var text: String

        static let entity = Entity<HeldNote>("held_notes", primaryKey: "id", \.id, fields: [Field("text", \.text)])

        /// The gate the next encoding in a document passes (`nil`: none).
        static let gate = Mutex<Gate?>(nil)

        enum CodingKeys: String, CodingKey {
            case id, text
        }

        init(id: Int64, text: String) {
            self.id = id
            self.text = text
        }

        func encode(to encoder: any Encoder) throws {
            // In a document or delta (under its `records`), not alone as
            // the store's check of a record's keys encodes it.
            if !encoder.codingPath.isEmpty { Self.gate.withLock { $0 }?.pass() }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(text, forKey: .text)
        }
    }

    @Test("a read answers while another read is held inside the state lock", arguments: FileFormat.allCases)
    func readBesideAHeldRead(format: FileFormat) async throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format, durability: .none)
        let gardens = try store.storage(for: LayoutGarden.self)
        let plants = try store.storage(for: LayoutPlant.self)
        var model: [String: LayoutGarden] = [:]
        for index in 0..<8 { model[CommitReadersTests.garden(index, height: 1).name] = CommitReadersTests.garden(index, height: 1) }
        try CommitReadersTests.sync { try gardens.persist(Array(model.values)) }
        let before = TableLayoutTests.ordered(model)

        // The first read that comes is held inside the lock; later ones pass.
        let gate = Gate()
        store.insideRead.set { gate.pass() }
        let held = Outcome<Result<[LayoutGarden], any Error>>()
        Thread { held.set(Result { try gardens.readAll() }) }.start()
        try #require(await CommitReadersTests.within { gate.arrived.wait(timeout: .now()) == .success }, "the first read never came")

        // Reads of every kind, synchronous on a thread of their own (one
        // that waited would hold up the test) and async, answer meanwhile.
        let garden3 = CommitReadersTests.garden(3, height: 1)
        let syncReads = Outcome<Result<Bool, any Error>>()
        Thread {
            syncReads.set(Result {
                let all = try gardens.readAll()
                let one = try gardens.read(primaryKey: garden3.name)
                let count = try plants.count()
                let inBed = try plants.read(Query(where: #Predicate<LayoutPlant> { $0.bed == 3 }))
                return all == before && one == garden3 && count == 40 && inBed == garden3.beds[0].plants
            })
        }.start()
        let asyncReads = Outcome<Result<Bool, any Error>>()
        Task {
            do {
                let all = try await gardens.readAll()
                let one = try await gardens.read(primaryKey: garden3.name)
                asyncReads.set(.success(all == before && one == garden3))
            } catch {
                asyncReads.set(.failure(error))
            }
        }
        let answered = await CommitReadersTests.within { syncReads.current != nil && asyncReads.current != nil }
        #expect(answered, "a read waited for another read")
        #expect(held.current == nil, "the held read returned before it was let go")

        // A write waits for the held read (it changes what the read sees),
        // and commits once the read is let go.
        let next = CommitReadersTests.garden(3, height: 9)
        let written = Outcome<Result<Void, any Error>>()
        Thread { written.set(Result { try gardens.persist([next]) }) }.start()
        try await Task.sleep(for: .milliseconds(100))
        #expect(written.current == nil, "a write changed the state while a read was inside the lock")

        gate.open()
        #expect(await CommitReadersTests.within { held.current != nil && syncReads.current != nil && asyncReads.current != nil })
        #expect(try #require(held.current).get() == before, "the held read")
        #expect(try #require(syncReads.current).get(), "the synchronous reads beside it")
        #expect(try #require(asyncReads.current).get(), "the async reads beside it")
        #expect(await CommitReadersTests.within { written.current != nil }, "the write did not return")
        try #require(written.current).get()
        store.insideRead.set(nil)
        model[next.name] = next
        #expect(try CommitReadersTests.sync { try gardens.readAll() } == TableLayoutTests.ordered(model))
        store.close()
    }

    @Test("reads answer the committed state while a commit encodes its documents", arguments: FileFormat.allCases)
    func readsBesideAnEncodingCommit(format: FileFormat) async throws {
        let scratch = try TemporaryDirectory("file-store")
        var store = try FileStore(directory: scratch.url, format: format, durability: .none)
        var notes = try store.storage(for: HeldNote.self)
        let first = (0..<50).map { HeldNote(id: $0, text: "note \($0)") }
        try CommitReadersTests.sync { try notes.persist(first) }

        // A delta (one note) and a whole document (every note), each held
        // while it encodes its first record.
        let writes: [(String, [HeldNote])] = [
            ("a delta", [HeldNote(id: 7, text: "seven")]),
            ("a whole document", (0..<60).map { HeldNote(id: $0, text: "again \($0)") }),
        ]
        var model = first
        for (what, batch) in writes {
            let gate = Gate()
            HeldNote.gate.withLock { $0 = gate }
            let storage = notes
            let written = Outcome<Result<Void, any Error>>()
            Thread { written.set(Result { try storage.persist(batch) }) }.start()
            let encoding = await CommitReadersTests.within { gate.arrived.wait(timeout: .now()) == .success }
            try #require(encoding, "\(what): the commit never encoded a record")

            let syncRead = Outcome<Result<[HeldNote], any Error>>()
            Thread { syncRead.set(Result { try storage.readAll() }) }.start()
            let asyncRead = Outcome<Result<[HeldNote], any Error>>()
            Task {
                do {
                    asyncRead.set(.success(try await storage.readAll()))
                } catch {
                    asyncRead.set(.failure(error))
                }
            }
            let answered = await CommitReadersTests.within { syncRead.current != nil && asyncRead.current != nil }
            #expect(answered, "\(what): a read waited for the commit's encoding")
            #expect(written.current == nil, "\(what): the write returned while its encoding was held")
            HeldNote.gate.withLock { $0 = nil }
            gate.open()
            #expect(await CommitReadersTests.within { syncRead.current != nil && asyncRead.current != nil })
            #expect(try #require(syncRead.current).get() == model, "\(what): the synchronous read")
            #expect(try #require(asyncRead.current).get() == model, "\(what): the async read")
            #expect(await CommitReadersTests.within { written.current != nil }, "\(what): the write did not return")
            try #require(written.current).get()
            var byId = Dictionary(uniqueKeysWithValues: model.map { ($0.id, $0) })
            for note in batch { byId[note.id] = note }
            model = byId.values.sorted { $0.id < $1.id }
            #expect(try CommitReadersTests.sync { try notes.readAll() } == model, "\(what): after the commit")
        }
        store.close()
        store = try FileStore(directory: scratch.url, format: format, durability: .none)
        notes = try store.storage(for: HeldNote.self)
        #expect(try CommitReadersTests.sync { try notes.readAll() } == model, "after reopening")
        store.close()
    }
}

import DAOCore
import Foundation
import TestSupport
import Testing

// The logistics domain (three levels: String codes with NFC/NFD twins, UUID
// keys, Int64 keys at their edges; an optional of every field type; reals at
// their edges; composite indexes over optionals) on every backend, through
// its DAOs as a client uses them, against the in-memory model of
// LogisticsDomain.swift: generated trees; generated queries (comparisons,
// ranges, &&, ||, !, nil, prefixes, substrings, relations, several sorts,
// limits) with their counts; rewrites, moves by a child's own storage,
// erasures by key and by predicates over relations; reopening between them.
// Every answer is compared bit for bit. `LOGISTICS_TRIAL_ROUNDS` sets the
// rounds (default 1; STORAGE_TORTURE=1 makes it 20), `LOGISTICS_TRIAL_SEED` the first seed.

extension RoundTripTests {
    @Suite("Client trial, logistics: three levels with UUID and Int64 keys against a model on every backend")
    struct LogisticsDomain {
        static var rounds: Int {
            if let rounds = ProcessInfo.processInfo.environment["LOGISTICS_TRIAL_ROUNDS"].flatMap(Int.init) { return rounds }
            return ProcessInfo.processInfo.environment["STORAGE_TORTURE"] == "1" ? 20 : 1
        }

        static var firstSeed: UInt64 {
            ProcessInfo.processInfo.environment["LOGISTICS_TRIAL_SEED"].flatMap(UInt64.init) ?? 20_261_127
        }

        @Test("generated trees, queries, counts, rewrites, moves and erasures answer as the model does", arguments: localBackends)
        func generated(backend: TestBackend) throws {
            var checks = 0
            for round in 0..<Self.rounds {
                checks += try run(backend, seed: Self.firstSeed &+ UInt64(round))
            }
            #expect(checks > 200 * Self.rounds)
        }

        private func run(_ backend: TestBackend, seed: UInt64) throws -> Int {
            let directory = try TemporaryDirectory("logistics-trial")
            let spelled = oneSpelling(backend)
            var random = TestRandom(seed: seed)
            var model = LogisticsModel()
            var next: Int64 = 0
            var checks = 0
            func check(_ condition: Bool, _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
                checks += 1
                #expect(condition, "seed \(seed) on \(backend.name): \(what())", sourceLocation: sourceLocation)
            }
            func checkAll(_ daos: LogisticsDAOs, _ what: String) throws {
                let shipments = try daos.shipments.read()
                check(sameBits(shipments, model.shipmentList), "shipments \(what): \(firstDifference(shipments, model.shipmentList))")
                let parcels = try daos.parcels.read()
                check(sameBits(parcels, model.parcelList), "parcels \(what): \(firstDifference(parcels, model.parcelList))")
                let scans = try daos.scans.read()
                check(sameBits(scans, model.scanList), "scans \(what): \(firstDifference(scans, model.scanList))")
                check(try daos.counts() == [shipments.count, parcels.count, scans.count], "counts \(what)")
                // Each parcel by its UUID key, as a client looks one up.
                if let parcel = model.parcelList.last {
                    let read = try daos.parcels.read(byPrimaryKey: parcel.uniqueId)
                    check(read.map { sameBits([$0], [parcel]) } ?? false, "parcel by key \(what)")
                }
            }
            func checkQuery<R: Record, T: Translator>(_ dao: DAO<AnyStorage<R>, T>, _ query: ReferenceQuery<R>, over records: [R])
                throws where T.Record == R, T.PlainObject.ID == R.PrimaryKey
            {
                let translator = dao.translator
                let expected = try query.answer(records).map(translator.plain(from:))
                let got = try dao.read(where: query.query.predicate, sortedBy: query.query.sortedBy, limit: query.query.limit)
                check(sameBits(got, expected), "\(query.name): \(firstDifference(got, expected))")
                let count = try dao.count(where: query.query.predicate)
                check(count == records.filter(query.matches).count, "count \(query.name): \(count)")
            }

            var codes = Logistics.codes
            try withLogistics(backend, in: directory.url) { daos, _ in
                let first = codes.map { Logistics.shipment($0, parcels: random.below(6), &random, next: &next, oneSpelling: spelled) }
                try daos.shipments.persist(first)
                for shipment in first { model.persist(shipment) }
                try checkAll(daos, "as persisted")
            }
            codes = model.shipmentList.map(\.uniqueId)
            for session in 0..<4 {
                try withLogistics(backend, in: directory.url) { daos, _ in
                    try checkAll(daos, "reopened for session \(session)")
                    for step in 0..<40 {
                        let what = "session \(session) step \(step)"
                        switch random.below(100) {
                        case 0..<30:
                            try checkQuery(daos.parcels, LogisticsQueries.parcels(model, &random),
                                           over: model.parcelList.map(ParcelTranslator().record(from:)))
                        case 30..<45:
                            try checkQuery(daos.shipments, LogisticsQueries.shipments(model, &random),
                                           over: model.shipmentList.map(ShipmentTranslator().record(from:)))
                        case 45..<60:
                            try checkQuery(daos.scans, LogisticsQueries.scans(model, &random),
                                           over: model.scanList.map(ScanTranslator().record(from:)))
                        case 60..<70:
                            // A shipment rewritten: some parcels kept and changed, some
                            // dropped, new ones, and one taken from another shipment.
                            let code = random.pick(codes)
                            var fresh = Logistics.shipment(code, parcels: random.below(4), &random, next: &next, oneSpelling: spelled)
                            var parcels = fresh.parcels
                            for var kept in model.shipments[Array(code.utf8)]?.parcels ?? [] where random.below(3) != 0 {
                                kept.weight = random.pick(Logistics.reals)
                                kept.note = random.below(2) == 0 ? nil : "changed"
                                parcels.append(kept)
                            }
                            if var taken = model.parcelList.filter({ !same($0.shipmentCode, code) }).first {
                                taken.shipmentCode = fresh.uniqueId
                                taken.scans = taken.scans.map { var scan = $0; scan.parcelId = taken.uniqueId; return scan }
                                parcels.append(taken)
                            }
                            fresh = fresh.with(parcels: parcels)
                            try daos.shipments.persist(fresh)
                            model.persist(fresh)
                            try checkAll(daos, "after rewriting a shipment, \(what)")
                        case 70..<76:
                            // A parcel moved to another shipment by its own storage.
                            let stored = model.shipmentList.map(\.uniqueId)
                            guard var parcel = model.parcelList.isEmpty ? nil : random.pick(model.parcelList) else { continue }
                            parcel.shipmentCode = random.pick(stored)
                            parcel.label += "moved"
                            try daos.parcels.persist(parcel)
                            model.persist(parcel)
                            try checkAll(daos, "after moving a parcel, \(what)")
                        case 76..<82:
                            // A scan written by its own storage under a parcel.
                            guard let parcel = model.parcelList.isEmpty ? nil : random.pick(model.parcelList) else { continue }
                            next += 1
                            let scan = Logistics.scan(-1_000_000 - next, of: parcel.uniqueId, &random, oneSpelling: spelled)
                            try daos.scans.persist(scan)
                            model.persist(scan)
                            try checkAll(daos, "after a scan by its own storage, \(what)")
                        case 82..<88:
                            switch random.below(3) {
                            case 0:
                                let erased = try daos.parcels.erase(where: #Predicate { $0.scans.isEmpty && $0.fragile })
                                let expected = model.eraseParcels { $0.scans.isEmpty && $0.fragile }
                                check(erased == expected, "parcels erased by a relation predicate: \(erased), want \(expected)")
                            case 1:
                                let erased = try daos.scans.erase(where: #Predicate { $0.temperature == nil && $0.ok })
                                let expected = model.eraseScans { $0.temperature == nil && $0.ok }
                                check(erased == expected, "scans erased by predicate: \(erased), want \(expected)")
                            default:
                                let erased = try daos.shipments.erase(where: #Predicate { $0.parcels.count == 1 })
                                let gone = model.shipmentList.filter { $0.parcels.count == 1 }
                                for shipment in gone { model.erase(shipment: shipment.uniqueId) }
                                check(erased == gone.count, "shipments erased by a relation predicate: \(erased), want \(gone.count)")
                            }
                            try checkAll(daos, "after an erasure by predicate, \(what)")
                        case 88..<94:
                            let parcels = model.parcelList
                            guard !parcels.isEmpty else { continue }
                            let keys = [random.pick(parcels).uniqueId, random.pick(parcels).uniqueId, UUID()]
                            let erased = try daos.parcels.erase(byPrimaryKeys: keys)
                            let expected = model.eraseParcels { keys.contains($0.uniqueId) }
                            check(erased == expected, "parcels erased by key: \(erased), want \(expected)")
                            try checkAll(daos, "after erasing parcels by key, \(what)")
                        default:
                            let code = random.pick(codes)
                            let had = model.shipments[Array(code.utf8)] != nil
                            check(try daos.shipments.erase(byPrimaryKey: code) == had, "erase shipment \(Array(code.utf8))")
                            model.erase(shipment: code)
                            try checkAll(daos, "after erasing a shipment, \(what)")
                        }
                    }
                }
            }
            try withLogistics(backend, in: directory.url) { daos, _ in try checkAll(daos, "reopened at the end") }
            return checks
        }
    }
}

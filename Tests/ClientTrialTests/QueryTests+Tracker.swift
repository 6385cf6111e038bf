import DAOCore
import Foundation
import TestSupport
import Testing

// Generated projects, issues and comments (seeded) and generated queries over
// the three levels: optionals (null-safe `==`, `!=`, a guarded force unwrap),
// relations' `count` and `isEmpty`, `contains` over constants and on text,
// string comparisons by scalars, sorts with ties and limits. Every backend's
// answer must equal the one computed in Swift over the model, and the json,
// sqlite and lmdb answers one another (plist stores its texts in NFC, so its
// answers are checked against its own model).

/// A query of the trial, and its answer computed in Swift.
struct TrackerQuery {
    let name: String
    let run: (TrackerDAOs) throws -> [String]
    let model: ([Project]) -> [String]
}

/// Text compared as the library compares it: by Unicode scalars.
func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
func same(_ a: String, _ b: String) -> Bool { Array(a.utf8) == Array(b.utf8) }
func same(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case (let a?, let b?): same(a, b)
    default: false
    }
}
func has(_ text: String, _ part: String) -> Bool {
    let bytes = Array(text.utf8), needle = Array(part.utf8)
    if needle.isEmpty { return true }
    guard bytes.count >= needle.count else { return false }
    return (0...(bytes.count - needle.count)).contains { Array(bytes[$0..<($0 + needle.count)]) == needle }
}

/// -1, 0, 1 for `a` against `b`, `nil` first.
func order<T>(_ a: T?, _ b: T?, _ less: (T, T) -> Bool) -> Int {
    switch (a, b) {
    case (nil, nil): return 0
    case (nil, _): return -1
    case (_, nil): return 1
    case (let a?, let b?): return less(a, b) ? -1 : (less(b, a) ? 1 : 0)
    }
}

/// `items` sorted by `keys` (each -1/0/1, reversed when its flag is set), then by `key`, then limited.
func modelSorted<T>(
    _ items: [T], _ keys: [((T, T) -> Int, Bool)], key: @escaping (T, T) -> Bool, limit: Int?
) -> [T] {
    let sorted = items.sorted { a, b in
        for (compare, reverse) in keys {
            let result = compare(a, b)
            if result != 0 { return reverse ? result > 0 : result < 0 }
        }
        return key(a, b)
    }
    return limit.map { Array(sorted.prefix($0)) } ?? sorted
}

/// The generated queries of one seed.
func trackerQueries(seed: UInt64, slugs: [String], people: [String]) -> [TrackerQuery] {
    var random = TestRandom(seed: seed)
    var queries: [TrackerQuery] = []
    func issues(_ projects: [Project]) -> [TrackedIssue] { projects.flatMap(\.issues) }
    func comments(_ projects: [Project]) -> [TrackedComment] { issues(projects).flatMap(\.comments) }
    let issueKey: (TrackedIssue, TrackedIssue) -> Bool = { $0.uniqueId < $1.uniqueId }
    let commentKey: (TrackedComment, TrackedComment) -> Bool = { precedes($0.uniqueId, $1.uniqueId) }
    let projectKey: (Project, Project) -> Bool = { precedes($0.uniqueId, $1.uniqueId) }
    func ids(_ list: [TrackedIssue]) -> [String] { list.map { "\($0.uniqueId)" } }

    for round in 0..<3 {
        let person = random.pick(people)
        let slug = random.pick(slugs)
        let state = random.pick(IssueState.allCases)
        let states = [random.pick(IssueState.allCases), random.pick(IssueState.allCases)]
        let time = Tracker.time(random.below(8))
        let count = random.below(4)
        let limit: Int? = random.below(3) == 0 ? nil : random.below(12)
        let reverse = random.below(2) == 0
        let priority = Int32(random.below(4)) - 1
        let part = random.pick(["e", "\u{308}", "Crash", "#1", "ü", "", "Zo"])
        let bound = random.pick(["C", "crash", "U", "Ü", "Zoe", "slow"])
        let slugBound = random.pick(slugs)

        queries.append(TrackerQuery(
            name: "\(round): assignee == \(person), by updatedAt \(reverse ? "desc" : "asc"), limit \(limit.map(String.init) ?? "-")",
            run: { daos in
                try ids(daos.issues.read(
                    where: #Predicate { $0.assignee == person },
                    sortedBy: [SortDescriptor(\.updatedAt, order: reverse ? .reverse : .forward)], limit: limit))
            },
            model: { projects in
                ids(modelSorted(
                    issues(projects).filter { same($0.assignee, person) },
                    [({ order($0.updatedAt, $1.updatedAt, <) }, reverse)], key: issueKey, limit: limit))
            }))
        queries.append(TrackerQuery(
            name: "\(round): !(assignee == \(person)) || assignee == nil, by assignee, due",
            run: { daos in
                try ids(daos.issues.read(
                    where: #Predicate { !($0.assignee == person) || $0.assignee == nil },
                    sortedBy: [SortDescriptor(\.assignee), SortDescriptor(\.due, order: .reverse)], limit: limit))
            },
            model: { projects in
                ids(modelSorted(
                    issues(projects).filter { !same($0.assignee, person) },
                    [({ order($0.assignee, $1.assignee, precedes) }, false), ({ order($0.due, $1.due, <) }, true)],
                    key: issueKey, limit: limit))
            }))
        queries.append(TrackerQuery(
            name: "\(round): due != nil && due! < \(time), by due, priority desc",
            run: { daos in
                try ids(daos.issues.read(
                    where: #Predicate { $0.due != nil && $0.due! < time },
                    sortedBy: [SortDescriptor(\.due), SortDescriptor(\.priority, order: .reverse)]))
            },
            model: { projects in
                ids(modelSorted(
                    issues(projects).filter { $0.due.map { $0 < time } ?? false },
                    [({ order($0.due, $1.due, <) }, false), ({ order($0.priority, $1.priority, <) }, true)],
                    key: issueKey, limit: nil))
            }))
        queries.append(TrackerQuery(
            name: "\(round): comments.count >= \(count) && \(states).contains(state), by priority",
            run: { daos in
                try ids(daos.issues.read(
                    where: #Predicate { $0.comments.count >= count && states.contains($0.state) },
                    sortedBy: [SortDescriptor(\.priority)], limit: limit))
            },
            model: { projects in
                ids(modelSorted(
                    issues(projects).filter { $0.comments.count >= count && states.contains($0.state) },
                    [({ order($0.priority, $1.priority, <) }, false)], key: issueKey, limit: limit))
            }))
        queries.append(TrackerQuery(
            name: "\(round): project \(slug), state \(state), updatedAt >= \(time) (the composite index)",
            run: { daos in
                try ids(daos.issues.read(
                    where: #Predicate { $0.projectSlug == slug && $0.state == state && $0.updatedAt >= time },
                    sortedBy: [SortDescriptor(\.updatedAt, order: .reverse)]))
            },
            model: { projects in
                ids(modelSorted(
                    issues(projects).filter { same($0.projectSlug, slug) && $0.state == state && $0.updatedAt >= time },
                    [({ order($0.updatedAt, $1.updatedAt, <) }, true)], key: issueKey, limit: nil))
            }))
        queries.append(TrackerQuery(
            name: "\(round): title < \(bound) || title.contains(\(part)), by title desc",
            run: { daos in
                try ids(daos.issues.read(
                    where: #Predicate { $0.title < bound || $0.title.contains(part) },
                    sortedBy: [SortDescriptor(\.title, order: .reverse)], limit: limit))
            },
            model: { projects in
                ids(modelSorted(
                    issues(projects).filter { precedes($0.title, bound) || has($0.title, part) },
                    [({ order($0.title, $1.title, precedes) }, true)], key: issueKey, limit: limit))
            }))
        queries.append(TrackerQuery(
            name: "\(round): priority > \(priority) && comments.isEmpty, or title starts with \(part)",
            run: { daos in
                try ids(daos.issues.read(
                    where: #Predicate { ($0.priority > priority && $0.comments.isEmpty) || $0.title.starts(with: part) }))
            },
            model: { projects in
                ids(modelSorted(
                    issues(projects).filter {
                        ($0.priority > priority && $0.comments.isEmpty) || $0.title.utf8.starts(with: part.utf8)
                    }, [], key: issueKey, limit: nil))
            }))
        queries.append(TrackerQuery(
            name: "\(round): comments by \(person) or edited, by postedAt, editedAt desc",
            run: { daos in
                try daos.comments.read(
                    where: #Predicate { $0.author == person || $0.editedAt != nil },
                    sortedBy: [SortDescriptor(\.postedAt), SortDescriptor(\.editedAt, order: .reverse)], limit: limit
                ).map(\.uniqueId)
            },
            model: { projects in
                modelSorted(
                    comments(projects).filter { same($0.author, person) || $0.editedAt != nil },
                    [({ order($0.postedAt, $1.postedAt, <) }, false), ({ order($0.editedAt, $1.editedAt, <) }, true)],
                    key: commentKey, limit: limit
                ).map(\.uniqueId)
            }))
        queries.append(TrackerQuery(
            name: "\(round): comments whose body contains \(part) and payload.count > \(count * 10)",
            run: { daos in
                let size = count * 10
                return try daos.comments.read(
                    where: #Predicate { $0.body.contains(part) && $0.payload.count > size },
                    sortedBy: [SortDescriptor(\.author)]
                ).map(\.uniqueId)
            },
            model: { projects in
                modelSorted(
                    comments(projects).filter { has($0.body, part) && $0.payload.count > count * 10 },
                    [({ order($0.author, $1.author, precedes) }, false)], key: commentKey, limit: nil
                ).map(\.uniqueId)
            }))
        queries.append(TrackerQuery(
            name: "\(round): projects with slug >= \(slugBound) and issues.count > \(count), or archived; by createdAt",
            run: { daos in
                try daos.projects.read(
                    where: #Predicate { ($0.slug >= slugBound && $0.issues.count > count) || $0.archived },
                    sortedBy: [SortDescriptor(\.createdAt, order: reverse ? .reverse : .forward)], limit: limit
                ).map { String(reflecting: $0.uniqueId) }
            },
            model: { projects in
                modelSorted(
                    projects.filter { (!precedes($0.uniqueId, slugBound) && $0.issues.count > count) || $0.archived },
                    [({ order($0.createdAt, $1.createdAt, <) }, reverse)], key: projectKey, limit: limit
                ).map { String(reflecting: $0.uniqueId) }
            }))
        queries.append(TrackerQuery(
            name: "\(round): projects without issues, by title",
            run: { daos in
                try daos.projects.read(where: #Predicate { $0.issues.isEmpty }, sortedBy: [SortDescriptor(\.title)])
                    .map { String(reflecting: $0.uniqueId) }
            },
            model: { projects in
                modelSorted(
                    projects.filter { $0.issues.isEmpty }, [({ order($0.title, $1.title, precedes) }, false)],
                    key: projectKey, limit: nil
                ).map { String(reflecting: $0.uniqueId) }
            }))
        queries.append(TrackerQuery(
            name: "\(round): count of issues assigned to \(person) in \(states)",
            run: { daos in ["\(try daos.issues.count(where: #Predicate { $0.assignee == person && states.contains($0.state) }))"] },
            model: { projects in
                ["\(issues(projects).filter { same($0.assignee, person) && states.contains($0.state) }.count)"]
            }))
    }
    return queries
}

extension QueryTests {
    @Suite("Client trial, tracker: generated queries against a model")
    struct TrackerDomain {
        @Test("every backend answers the generated queries as the model does, and as one another", arguments: [5, 6, 7] as [UInt64])
        func queries(seed: UInt64) throws {
            var answers: [String: [[String]]] = [:]
            for backend in localBackends {
                let directory = try TemporaryDirectory("tracker-query")
                var random = TestRandom(seed: seed)
                var next: Int64 = -40
                var projects = Tracker.slugs.map { slug -> Project in
                    defer { next += 100 }
                    return Tracker.project(slug, version: 1, firstIssue: next, issues: random.below(9), random: &random)
                }
                if oneSpelling(backend) {
                    // Two slugs of one spelling would be one project: keep the first.
                    var seen: Set<[UInt8]> = []
                    projects = projects.map(Tracker.oneSpelling).filter { seen.insert(Array($0.uniqueId.utf8)).inserted }
                }
                let model = Tracker.sorted(projects)
                let slugs = model.map(\.uniqueId) + ["", "b", "\u{FFFF}"]
                let people = oneSpelling(backend) ? Tracker.people.map { $0.precomposedStringWithCanonicalMapping } : Tracker.people
                let queries = trackerQueries(seed: seed &* 31, slugs: slugs, people: people)
                // Persisted through the DAO in two batches, then read after a reopen.
                try withTracker(backend, in: directory.url) { daos, _ in
                    try daos.projects.persist(projects.prefix(5))
                    try daos.projects.persist(projects.dropFirst(5))
                }
                try withTracker(backend, in: directory.url) { daos, _ in
                    #expect(exactly(try daos.projects.read(), model), "the projects on \(backend.name)")
                    for query in queries {
                        let got = try query.run(daos)
                        let want = query.model(model)
                        #expect(exactly(got, want), "\(query.name) on \(backend.name): got \(got), want \(want)")
                        answers[backend.name, default: []].append(got)
                    }
                }
            }
            for name in ["sqlite", "lmdb"] {
                #expect(exactly(answers[name], answers["json"]), "\(name)'s answers differ from json's")
            }
        }
    }
}

import DAOCore
import DAOMacros
import Foundation

// A fourth outside domain, declared the README's way (@StoredRecord, plain
// objects and translators beside them): an issue tracker. Projects (String
// slugs, some non-ASCII, some equal to another in NFC but not in bytes) own
// issues (Int64 keys, an optional assignee and due date, a String enum state,
// a composite index on project, state and time of update) own comments (UUID
// strings, an optional time of edit, a bytes payload): three levels. Shared by
// the trial's tests and by StoreHelper, which writes it in a second process
// that the tests kill.

/// The state of an issue: a String enum stored as its raw value.
public enum IssueState: String, Codable, Sendable, FieldValue, CaseIterable {
    case open, inProgress = "in progress", closed, wontFix = "won't fix"
}

/// A project, keyed by its slug; owns its issues.
@StoredRecord("tk_projects", primaryKey: "slug")
public struct ProjectRecord: Equatable {
    /// The `slug` field: the key.
    public var slug: String
    /// The `title` field.
    public var title: String
    /// The `archived` field.
    public var archived: Bool
    /// The `createdAt` field.
    public var createdAt: Date
    /// The children.
    @Children(foreignKey: "projectSlug") public var issues: [IssueRecord]
}

/// An issue of a project (Int64 key); owns its comments.
@StoredRecord(
    "tk_issues", indexes: [Index("tk_issues_by_project_state_updated", on: ["projectSlug", "state", "updatedAt"])],
    ownedBy: ProjectRecord.self)
public struct IssueRecord: Equatable {
    /// The `id` field: the key.
    public var id: Int64
    /// The `projectSlug` field: the owner.
    public var projectSlug: String
    /// The `title` field.
    public var title: String
    /// The `state` field.
    public var state: IssueState
    /// The `assignee` field.
    public var assignee: String?
    /// The `due` field.
    public var due: Date?
    /// The `priority` field.
    public var priority: Int32
    /// The `updatedAt` field.
    public var updatedAt: Date
    /// The children.
    @Children(foreignKey: "issueId") public var comments: [CommentRecord]
}

/// A comment on an issue (a UUID string key), with a bytes payload.
@StoredRecord(
    "tk_comments", indexes: [Index("tk_comments_by_issue_posted", on: ["issueId", "postedAt"])],
    ownedBy: IssueRecord.self)
public struct CommentRecord: Equatable {
    /// The `id` field: the key.
    public var id: String
    /// The `issueId` field: the owner.
    public var issueId: Int64
    /// The `author` field.
    public var author: String
    /// The `body` field.
    public var body: String
    /// The `postedAt` field.
    public var postedAt: Date
    /// The `editedAt` field.
    public var editedAt: Date?
    /// The `payload` field.
    public var payload: Data
}

// MARK: - Plain objects and translators

/// The plain object of a project, with its issues.
public struct Project: Plain {
    /// The slug.
    public let uniqueId: String
    /// The title.
    public let title: String
    /// Whether it is archived.
    public let archived: Bool
    /// When it was created.
    public let createdAt: Date
    /// Its issues, in key order.
    public let issues: [TrackedIssue]

    /// A project.
    public init(uniqueId: String, title: String, archived: Bool, createdAt: Date, issues: [TrackedIssue]) {
        self.uniqueId = uniqueId
        self.title = title
        self.archived = archived
        self.createdAt = createdAt
        self.issues = issues
    }
}

/// The plain object of an issue, with its comments.
public struct TrackedIssue: Plain {
    /// The key.
    public let uniqueId: Int64
    /// The owner's slug.
    public let projectSlug: String
    /// The title.
    public let title: String
    /// The state.
    public let state: IssueState
    /// Who it is assigned to.
    public let assignee: String?
    /// When it is due.
    public let due: Date?
    /// Its priority.
    public let priority: Int32
    /// When it was updated last.
    public let updatedAt: Date
    /// Its comments, in key order.
    public let comments: [TrackedComment]

    /// An issue.
    public init(
        uniqueId: Int64, projectSlug: String, title: String, state: IssueState, assignee: String?, due: Date?,
        priority: Int32, updatedAt: Date, comments: [TrackedComment]
    ) {
        self.uniqueId = uniqueId
        self.projectSlug = projectSlug
        self.title = title
        self.state = state
        self.assignee = assignee
        self.due = due
        self.priority = priority
        self.updatedAt = updatedAt
        self.comments = comments
    }
}

/// The plain object of a comment.
public struct TrackedComment: Plain {
    /// The key: a UUID string.
    public let uniqueId: String
    /// The owner's key.
    public let issueId: Int64
    /// Who wrote it.
    public let author: String
    /// The text.
    public let body: String
    /// When it was posted.
    public let postedAt: Date
    /// When it was edited, if it was.
    public let editedAt: Date?
    /// Attached bytes.
    public let payload: Data

    /// A comment.
    public init(
        uniqueId: String, issueId: Int64, author: String, body: String, postedAt: Date, editedAt: Date?, payload: Data
    ) {
        self.uniqueId = uniqueId
        self.issueId = issueId
        self.author = author
        self.body = body
        self.postedAt = postedAt
        self.editedAt = editedAt
        self.payload = payload
    }
}

/// Comments to records and back.
public struct CommentTranslator: Translator {
    /// The translator.
    public init() {}
    /// The record of `plain`.
    public func record(from plain: TrackedComment) -> CommentRecord {
        CommentRecord(
            id: plain.uniqueId, issueId: plain.issueId, author: plain.author, body: plain.body,
            postedAt: plain.postedAt, editedAt: plain.editedAt, payload: plain.payload)
    }
    /// The plain object of `record`.
    public func plain(from record: CommentRecord) -> TrackedComment {
        TrackedComment(
            uniqueId: record.id, issueId: record.issueId, author: record.author, body: record.body,
            postedAt: record.postedAt, editedAt: record.editedAt, payload: record.payload)
    }
}

/// Issues to records and back, with their comments.
public struct IssueTranslator: Translator {
    /// The translator.
    public init() {}
    /// The record of `plain`.
    public func record(from plain: TrackedIssue) -> IssueRecord {
        IssueRecord(
            id: plain.uniqueId, projectSlug: plain.projectSlug, title: plain.title, state: plain.state,
            assignee: plain.assignee, due: plain.due, priority: plain.priority, updatedAt: plain.updatedAt,
            comments: plain.comments.map(CommentTranslator().record(from:)))
    }
    /// The plain object of `record`.
    public func plain(from record: IssueRecord) -> TrackedIssue {
        TrackedIssue(
            uniqueId: record.id, projectSlug: record.projectSlug, title: record.title, state: record.state,
            assignee: record.assignee, due: record.due, priority: record.priority, updatedAt: record.updatedAt,
            comments: record.comments.map(CommentTranslator().plain(from:)))
    }
}

/// Projects to records and back, with their issues and comments.
public struct ProjectTranslator: Translator {
    /// The translator.
    public init() {}
    /// The record of `plain`.
    public func record(from plain: Project) -> ProjectRecord {
        ProjectRecord(
            slug: plain.uniqueId, title: plain.title, archived: plain.archived, createdAt: plain.createdAt,
            issues: plain.issues.map(IssueTranslator().record(from:)))
    }
    /// The plain object of `record`.
    public func plain(from record: ProjectRecord) -> Project {
        Project(
            uniqueId: record.slug, title: record.title, archived: record.archived, createdAt: record.createdAt,
            issues: record.issues.map(IssueTranslator().plain(from:)))
    }
}

/// The three DAOs of the tracker over one store.
public struct TrackerDAOs {
    /// Projects, with their issues and comments.
    public let projects: DAO<AnyStorage<ProjectRecord>, ProjectTranslator>
    /// Issues, with their comments.
    public let issues: DAO<AnyStorage<IssueRecord>, IssueTranslator>
    /// Comments.
    public let comments: DAO<AnyStorage<CommentRecord>, CommentTranslator>

    /// The DAOs over `store`.
    public init(_ store: any Store) throws {
        projects = DAO(storage: try store.anyStorage(for: ProjectRecord.self), translator: ProjectTranslator())
        issues = DAO(storage: try store.anyStorage(for: IssueRecord.self), translator: IssueTranslator())
        comments = DAO(storage: try store.anyStorage(for: CommentRecord.self), translator: CommentTranslator())
    }

    /// How many records each level holds, counted through its own storage.
    public func counts() throws -> [Int] {
        [try projects.count(), try issues.count(), try comments.count()]
    }
}

// MARK: - Generated data

/// The tracker's generated data.
public enum Tracker {
    /// Slugs: ASCII, non-ASCII, an empty one, and two pairs equal in NFC but
    /// not in bytes ("café" precomposed and decomposed; "Å" as one scalar, as
    /// A and a ring, and as the Ångström sign).
    public static let slugs = [
        "core", "caf\u{E9}", "cafe\u{301}", "\u{C5}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m", "\u{212B}ngstr\u{F6}m",
        "", "数据", "z-last", "Zeta", "a b", "🐛-bugs",
    ]
    /// People, some equal in NFC but not in bytes.
    public static let people = ["ana", "Bo", "Zoe\u{308}", "Zo\u{EB}", "", "李"]
    /// A few times, with ties.
    public static func time(_ n: Int) -> Date { Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(n) * 3_600) }

    /// A UUID string from the generator (lower or upper case, as clients write them).
    public static func uuid(_ random: inout TestRandom) -> String {
        var bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let text = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
            .uuidString
        return random.below(2) == 0 ? text.lowercased() : text
    }

    /// A project `slug` with generated issues numbered from `firstIssue`;
    /// `version` changes every value, so that a rewrite can be told apart.
    public static func project(
        _ slug: String, version: Int, firstIssue: Int64, issues: Int, random: inout TestRandom, payloadBytes: Int = 64
    ) -> Project {
        let issueList = (0..<issues).map { index -> TrackedIssue in
            let id = firstIssue + Int64(index)
            let comments = (0..<random.below(5)).map { _ -> TrackedComment in
                TrackedComment(
                    uniqueId: uuid(&random), issueId: id, author: random.pick(people),
                    body: random.pick(["", "LGTM", "lgtm", "needs a test", "Ça marche", "na\u{EF}ve", "nai\u{308}ve"])
                        + " v\(version)",
                    postedAt: time(random.below(6)), editedAt: random.below(3) == 0 ? time(random.below(6)) : nil,
                    payload: Data((0..<random.below(payloadBytes + 1)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
            }
            .sorted { $0.uniqueId.utf8.lexicographicallyPrecedes($1.uniqueId.utf8) }
            return TrackedIssue(
                uniqueId: id, projectSlug: slug,
                title: random.pick(["Crash", "crash", "Ünicode", "Unicode", "slow", "", "Zoe\u{308}"]) + " #\(version)",
                state: random.pick(IssueState.allCases), assignee: random.below(3) == 0 ? nil : random.pick(people),
                due: random.below(2) == 0 ? nil : time(random.below(8)), priority: Int32(random.below(4)) - 1,
                updatedAt: time(random.below(5)), comments: comments)
        }
        return Project(
            uniqueId: slug, title: "Project \(slug) v\(version)", archived: random.below(4) == 0,
            createdAt: time(-random.below(3)), issues: issueList)
    }

    /// `project` with every text in NFC: what the property-list store needs
    /// (it refuses canonically equivalent texts spelled two ways in one
    /// entity's document; docs/SEMANTICS.md).
    public static func oneSpelling(_ project: Project) -> Project {
        func nfc(_ text: String) -> String { text.precomposedStringWithCanonicalMapping }
        return Project(
            uniqueId: nfc(project.uniqueId), title: nfc(project.title), archived: project.archived,
            createdAt: project.createdAt,
            issues: project.issues.map { issue in
                TrackedIssue(
                    uniqueId: issue.uniqueId, projectSlug: nfc(issue.projectSlug), title: nfc(issue.title),
                    state: issue.state, assignee: issue.assignee.map(nfc), due: issue.due, priority: issue.priority,
                    updatedAt: issue.updatedAt,
                    comments: issue.comments.map {
                        TrackedComment(
                            uniqueId: $0.uniqueId, issueId: $0.issueId, author: nfc($0.author), body: nfc($0.body),
                            postedAt: $0.postedAt, editedAt: $0.editedAt, payload: $0.payload)
                    })
            })
    }

    /// `projects` sorted the way every backend returns them: by the slug's UTF-8 bytes.
    public static func sorted(_ projects: some Sequence<Project>) -> [Project] {
        projects.sorted { $0.uniqueId.utf8.lexicographicallyPrecedes($1.uniqueId.utf8) }
    }
}

// MARK: - A sequence of writes, for the kill tests

/// The seeded sequence of calls the kill tests' writer makes: three-level
/// persists of whole projects (new and rewritten), erasures of a project with
/// its issues and comments, and erasures of issues by a predicate.
public enum TrackerWrites {
    /// One call.
    public enum Step: Sendable {
        /// Persist a project with its issues and comments.
        case persist(Project)
        /// Erase a project (cascading).
        case erase(String)
        /// Erase every closed issue of a project (with their comments).
        case eraseClosed(String)
    }

    /// The `index`th call; with `oneSpelling`, every text in NFC.
    public static func step(_ index: Int, oneSpelling: Bool) -> Step {
        func spell(_ slug: String) -> String { oneSpelling ? slug.precomposedStringWithCanonicalMapping : slug }
        var random = TestRandom(seed: UInt64(index) &* 7919 &+ 17)
        let slug = Tracker.slugs[(index * 5) % Tracker.slugs.count]
        switch index % 6 {
        case 4: return .erase(spell(Tracker.slugs[(index * 7) % Tracker.slugs.count]))
        case 5: return .eraseClosed(spell(Tracker.slugs[(index * 3) % Tracker.slugs.count]))
        default:
            let project = Tracker.project(
                slug, version: index, firstIssue: Int64(index) * 1_000, issues: 6 + random.below(10), random: &random,
                payloadBytes: 3_000)
            return .persist(oneSpelling ? Tracker.oneSpelling(project) : project)
        }
    }

    /// The projects (sorted by slug) after the first `count` calls.
    public static func state(after count: Int, oneSpelling: Bool) -> [Project] {
        var projects: [[UInt8]: Project] = [:]
        for index in 0..<count {
            switch step(index, oneSpelling: oneSpelling) {
            case .persist(let project): projects[Array(project.uniqueId.utf8)] = project
            case .erase(let slug): projects[Array(slug.utf8)] = nil
            case .eraseClosed(let slug):
                if let project = projects[Array(slug.utf8)] {
                    projects[Array(slug.utf8)] = Project(
                        uniqueId: project.uniqueId, title: project.title, archived: project.archived,
                        createdAt: project.createdAt, issues: project.issues.filter { $0.state != .closed })
                }
            }
        }
        return Tracker.sorted(projects.values)
    }

    /// Makes the `index`th call through `daos`.
    public static func apply(_ index: Int, oneSpelling: Bool, to daos: TrackerDAOs) throws {
        switch step(index, oneSpelling: oneSpelling) {
        case .persist(let project): try daos.projects.persist(project)
        case .erase(let slug): _ = try daos.projects.erase(byPrimaryKey: slug)
        case .eraseClosed(let slug):
            let closed = IssueState.closed
            _ = try daos.issues.erase(where: #Predicate { $0.projectSlug == slug && $0.state == closed })
        }
    }
}

import DAOCore

// Record types that more than one test target stores.

/// A parent whose child entity does not name it as its owner.
public struct TreeRecord: Record, Equatable {
    /// Trees are keyed by integers.
    public typealias PrimaryKey = Int64
    /// The tree's key.
    public var id: Int64
    /// The tree's leaves, stored in `leaves` by their `treeId`.
    public var leaves: [LeafRecord]

    /// A tree with `leaves`.
    public init(id: Int64, leaves: [LeafRecord]) {
        self.id = id
        self.leaves = leaves
    }

    /// `trees`, with no field of its own and a relation to `leaves`.
    public static let entity = Entity<TreeRecord>(
        "trees", primaryKey: "id", \.id, fields: [],
        relations: [Relation("leaves", \.leaves, foreignKey: "treeId", \LeafRecord.treeId)])
}

/// A child that does not declare its owner, so its table can exist before its
/// parent's.
public struct LeafRecord: Record, Equatable {
    /// Leaves are keyed by integers.
    public typealias PrimaryKey = Int64
    /// The leaf's key.
    public var id: Int64
    /// The key of the tree that holds the leaf.
    public var treeId: Int64
    /// Some text.
    public var label: String

    /// A leaf of tree `treeId`.
    public init(id: Int64, treeId: Int64, label: String) {
        self.id = id
        self.treeId = treeId
        self.label = label
    }

    /// `leaves`, with no owner declared.
    public static let entity = Entity<LeafRecord>(
        "leaves", primaryKey: "id", \.id, fields: [Field("treeId", \.treeId), Field("label", \.label)])
}

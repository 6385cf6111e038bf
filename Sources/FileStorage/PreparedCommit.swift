import DAOCore
import Foundation

/// A commit's files and manifest: what they hold taken under the store's
/// state lock (``StoreState/prepareCommit()``), encoded and written without
/// it, holding the store's writer lock.
struct PreparedCommit {
    struct File {
        var url: URL
        var name: String
        var entity: String
        var encoding: DocumentEncoding
    }
    struct Superseded: Sendable {
        var name: String
        var entity: String
    }
    /// The new documents and deltas.
    var files: [File]
    /// The manifest that names them, without their checksums, not sealed yet.
    var manifest: Manifest
    /// The files the manifest no longer names once it is written.
    var superseded: [Superseded]
    var storeId: String

    /// The encoded files and the manifest with their checksums.
    struct Encoded {
        var files: [(url: URL, data: Data)]
        var manifest: Manifest

        /// Writes the documents unsynced, then the manifest, synced together
        /// with them (``FileStore/write(_:in:durability:syncingAlso:operation:)``);
        /// returns the manifest written. `beforeManifest` runs between the two
        /// (a test's hook). On failure the new files are removed (the manifest
        /// still names the old ones) and the error is thrown.
        func write(
            in directory: URL, durability: Durability, beforeManifest: (@Sendable () throws -> Void)?
        ) throws -> Manifest {
            var written: [URL] = []
            written.reserveCapacity(files.count)
            do {
                for file in files {
                    try FileIO.create(file.url, data: file.data, sync: false, operation: .persist)
                    written.append(file.url)
                }
                try beforeManifest?()
                return try FileStore.write(
                    manifest, in: directory, durability: durability, syncingAlso: written, operation: .persist)
            } catch {
                for url in written { unlink(url.path) }
                throw error
            }
        }
    }

    /// Encodes each document and delta and records its CRC-32C and size in
    /// the manifest.
    /// - Throws: ``StorageError/Kind/encoding`` naming the file when a record
    ///   does not encode.
    func encode() throws -> Encoded {
        var encoded = Encoded(files: [], manifest: manifest)
        encoded.files.reserveCapacity(files.count)
        for file in files {
            let data: Data
            do {
                data = try file.encoding.encode()
            } catch {
                throw StorageError(
                    .encoding, .persist, entity: file.entity, path: file.url.path,
                    message: "the records could not be encoded: \(StoreState.describe(error))", underlying: error)
            }
            encoded.files.append((file.url, data))
            encoded.manifest.checksums?[file.name] = DocumentChecksum(crc32c: CRC32C.checksum(data), size: data.count)
        }
        return encoded
    }

    /// Removes the files the written manifest no longer names, those the
    /// store may remove (``StoreFiles/mayRemoveSuperseded(_:entity:storeId:)``).
    /// One that cannot be removed now is removed at the next open; nothing
    /// refers to it either way.
    func removeSuperseded(in directory: URL) {
        for old in superseded where StoreFiles.mayRemoveSuperseded(old.name, entity: old.entity, storeId: storeId) {
            unlink(directory.appendingPathComponent(old.name).path)
        }
    }
}

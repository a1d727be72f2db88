import Foundation
import Logging

/// Media in folders under the storage root (`jobs/<id>/input|highlight.mp4|poster.jpg|analysis.json`).
/// The job's folder is also the worker's workspace: nothing is copied.
public struct FilesystemMediaStorage: MediaStorage {
    public let layout: StorageLayout
    let logger: Logger

    public init(layout: StorageLayout, logger: Logger) {
        self.layout = layout
        self.logger = logger
    }

    public var name: String { "filesystem" }

    /// The upload reaches the disk, and its new name the folder, before the job row commits: a
    /// power loss cannot leave a job without its input.
    public func storeInput(jobID: String, from localFile: String) async throws {
        try DurableFiles.sync(localFile)
        try FileManager.default.createDirectory(atPath: layout.jobDirectory(jobID), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: localFile, toPath: layout.inputPath(jobID))
        try DurableFiles.syncDirectory(layout.jobDirectory(jobID))
        try DurableFiles.syncDirectory(layout.jobsDirectory)
    }

    public func prepareWorkspace(jobID: String) async throws -> JobWorkspace {
        JobWorkspace(directory: layout.jobDirectory(jobID))
    }

    /// On disk before the database says completed: a power loss cannot leave a "completed" job
    /// without its file.
    public func publish(jobID: String, files: [MediaFile]) async throws {
        let workspace = JobWorkspace(directory: layout.jobDirectory(jobID))
        for file in files { try? DurableFiles.sync(workspace.path(file)) }
        try? DurableFiles.syncDirectory(workspace.directory)
    }

    public func discardWorkspace(jobID: String) async {}

    public func removeMedia(jobID: String, keepingInput: Bool) async {
        layout.removeJobFiles(jobID, keepingInput: keepingInput)
    }

    public func copyMedia(from source: String, to target: String, files: [MediaFile]) async throws {
        let directory = layout.jobDirectory(target)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for file in files {
                let from = path(source, file), to = path(target, file)
                guard FileManager.default.fileExists(atPath: from) else { throw MediaStorageError.notFound }
                // A hard link costs no space and no time; a copy where links are not possible.
                if link(from, to) != 0 { try FileManager.default.copyItem(atPath: from, toPath: to) }
            }
            try DurableFiles.syncDirectory(directory)
            try DurableFiles.syncDirectory(layout.jobsDirectory)
        } catch let error as MediaStorageError {
            throw error
        } catch {
            logger.error(
                "cannot copy a job's media", metadata: ["from": "\(source)", "to": "\(target)", "error": "\(error)"])
            throw MediaStorageError.unavailable
        }
    }

    public func fetch(jobID: String, file: MediaFile, to target: String) async throws {
        let from = path(jobID, file)
        guard FileManager.default.fileExists(atPath: from) else { throw MediaStorageError.notFound }
        do {
            try? FileManager.default.removeItem(atPath: target)
            try FileManager.default.copyItem(atPath: from, toPath: target)
        } catch {
            logger.error(
                "cannot copy a stored file",
                metadata: ["job": "\(jobID)", "file": "\(file.rawValue)", "error": "\(error)"])
            throw MediaStorageError.unavailable
        }
    }

    public func removeInput(jobID: String) async {
        try? FileManager.default.removeItem(atPath: layout.inputPath(jobID))
    }

    public func mediaExists(jobID: String, file: MediaFile) async throws -> Bool {
        FileManager.default.fileExists(atPath: path(jobID, file))
    }

    public func download(jobID: String, file: MediaFile) async throws -> MediaDownload? {
        let path = path(jobID, file)
        return FileManager.default.fileExists(atPath: path) ? .file(path: path) : nil
    }

    public func storedJobs() async throws -> [StoredJobMedia] {
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: layout.jobsDirectory)) ?? []
        return folders.map { id in
            let modified =
                (try? FileManager.default.attributesOfItem(atPath: layout.jobDirectory(id)))?[.modificationDate]
                as? Date
            return StoredJobMedia(
                jobID: id, modified: modified, hasInput: FileManager.default.fileExists(atPath: layout.inputPath(id)))
        }
    }

    public func workspaceJobIDs() -> [String] { [] }

    public func readiness() async -> (ok: Bool, detail: String)? { nil }

    func path(_ jobID: String, _ file: MediaFile) -> String {
        layout.jobDirectory(jobID) + "/" + file.rawValue
    }
}

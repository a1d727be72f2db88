import Foundation
import JobMedia
import Logging
import MomentsConfig
import Store

/// Periodic clean-up: results past their retention, uploads kept by a crash, folders that belong to
/// no job, stale analysis-cache entries.
struct Sweeper: Sendable {
    let database: any JobRepository
    let layout: StorageLayout
    /// Where job media live (folders under jobs/, or a bucket).
    let storage: any MediaStorage
    /// Jobs a worker of this process runs now (their workspaces are left alone).
    let runningJobIDs: @Sendable () -> [String]
    let settings: ServiceSettings
    let logger: Logger
    let clock: @Sendable () -> Date
    /// Files younger than this are left alone (an upload may be between its rename and its row).
    var graceSeconds: TimeInterval = 3600

    func run(until stop: @Sendable () -> Bool) async {
        while !stop() {
            await sweep()
            var waited = 0.0
            while waited < settings.sweepIntervalSeconds, !stop() {
                try? await Task.sleep(for: .seconds(1))
                waited += 1
            }
        }
    }

    /// One pass. Returns how many jobs had media removed.
    @discardableResult
    func sweep() async -> Int {
        var removed = 0
        let now = clock()
        do {
            let expired = try await database.jobsWithExpiredMedia(
                now: now, defaultRetentionHours: settings.resultRetentionHours, limit: 500)
            for job in expired {
                await storage.removeMedia(jobID: job.id, keepingInput: false)
                try await database.markMediaDeleted(id: job.id, now: now)
                removed += 1
            }
            // Media of jobs that do not exist (a crash between storing an upload and its row, a
            // row deleted by hand): gone once older than the grace period.
            let stored = try await storage.storedJobs()
            let known = try await database.existingJobIDs(stored.map(\.jobID))
            // Files' ages are measured on the wall clock their times come from, never on the
            // service's clock (tests move that one to month ends; a file just written is not old).
            let wallClock = Date()
            for media in stored
            where !known.contains(media.jobID)
                && wallClock.timeIntervalSince(media.modified ?? wallClock) > graceSeconds
            {
                await storage.removeMedia(jobID: media.jobID, keepingInput: false)
            }
            for media in stored where known.contains(media.jobID) {
                guard let job = try await database.job(id: media.jobID), job.status.isFinished else { continue }
                if job.mediaDeletedAt != nil {
                    // Deleted (DELETE, retention) while the storage failed: its files go now.
                    await storage.removeMedia(jobID: media.jobID, keepingInput: false)
                } else if media.hasInput && !settings.keepUploads
                    && !(job.status == .completed && job.edit?.keepsInput == true && job.edit?.inputHeldBy == nil)
                {
                    // Left by a crash between completion and the input's removal; a completed job
                    // whose plan allows re-cuts keeps its input until its retention ends (unless a
                    // re-upload of the same video holds it: then that one's copy is kept).
                    await storage.removeInput(jobID: media.jobID)
                }
            }
        } catch is CancellationError {
            return removed
        } catch {
            logger.error("sweep failed", metadata: ["error": "\(error)"])
        }
        await removeIdleWorkspaces()
        removeAbandonedUploads(olderThan: graceSeconds)
        pruneCache(olderThan: max(settings.resultRetention, graceSeconds))
        if removed > 0 { logger.info("sweeper removed expired results", metadata: ["jobs": "\(removed)"]) }
        return removed
    }

    /// Local workspaces (S3 scratch folders) of jobs no worker is running: left by a crash. A job
    /// still processing is left alone even when this process does not run it: another process
    /// sharing this storage folder may (its workspace goes once the job finishes or is rescued).
    func removeIdleWorkspaces() async {
        let running = Set(runningJobIDs())
        for id in storage.workspaceJobIDs() where !running.contains(id) {
            if let job = try? await database.job(id: id), job.status == .processing { continue }
            // Re-read: a worker may have claimed the job since `running` was taken.
            if runningJobIDs().contains(id) { continue }
            await storage.discardWorkspace(jobID: id)
        }
    }

    /// Partial uploads left by a dropped connection or a crash.
    func removeAbandonedUploads(olderThan seconds: TimeInterval) {
        let now = Date()  // the files' clock
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.uploadsDirectory)) ?? [] {
            let path = layout.uploadsDirectory + "/" + name
            if age(path, now: now) >= seconds { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    private func pruneCache(olderThan seconds: TimeInterval) {
        let now = Date()  // the files' clock
        // One folder per account; its entries expire one by one. The folders stay (a running job's
        // child is confined to its account's folder, which must exist while it runs).
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.cacheDirectory)) ?? [] {
            let folder = layout.cacheDirectory + "/" + name
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                if age(folder, now: now) > seconds { try? FileManager.default.removeItem(atPath: folder) }
                continue
            }
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                let path = folder + "/" + entry
                if age(path, now: now) > seconds { try? FileManager.default.removeItem(atPath: path) }
            }
        }
    }

    private func age(_ path: String, now: Date) -> TimeInterval {
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        else { return 0 }
        return now.timeIntervalSince(modified)
    }
}

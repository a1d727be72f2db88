import Foundation
import JobStore
import Logging
import MomentsConfig

/// Periodic clean-up: results past their retention, uploads kept by a crash, folders that belong to
/// no job, stale analysis-cache entries.
struct Sweeper: Sendable {
    let database: any MomentsStore
    let layout: StorageLayout
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

    /// One pass. Returns how many job folders had media removed.
    @discardableResult
    func sweep() async -> Int {
        var removed = 0
        let now = clock()
        do {
            let expired = try await database.jobsWithExpiredMedia(now: now, defaultRetentionHours: settings.resultRetentionHours, limit: 500)
            for job in expired {
                layout.removeJobFiles(job.id)
                try await database.markMediaDeleted(id: job.id, now: now)
                removed += 1
            }
            let folders = (try? FileManager.default.contentsOfDirectory(atPath: layout.jobsDirectory)) ?? []
            let known = try await database.existingJobIDs(folders)
            for folder in folders where !known.contains(folder) && age(layout.jobDirectory(folder), now: now) > graceSeconds {
                layout.removeJobFiles(folder)
            }
            if !settings.keepUploads {
                for id in known {
                    let input = layout.inputPath(id)
                    guard FileManager.default.fileExists(atPath: input),
                          let job = try await database.job(id: id), job.status.isFinished else { continue }
                    try? FileManager.default.removeItem(atPath: input)
                }
            }
        } catch is CancellationError {
            return removed
        } catch {
            logger.error("sweep failed", metadata: ["error": "\(error)"])
        }
        removeAbandonedUploads(olderThan: graceSeconds)
        pruneCache(olderThan: max(settings.resultRetention, graceSeconds), now: now)
        if removed > 0 { logger.info("sweeper removed expired results", metadata: ["jobs": "\(removed)"]) }
        return removed
    }

    /// Partial uploads left by a dropped connection or a crash.
    func removeAbandonedUploads(olderThan seconds: TimeInterval) {
        let now = clock()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.uploadsDirectory)) ?? [] {
            let path = layout.uploadsDirectory + "/" + name
            if age(path, now: now) >= seconds { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    private func pruneCache(olderThan seconds: TimeInterval, now: Date) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.cacheDirectory)) ?? [] {
            let path = layout.cacheDirectory + "/" + name
            if age(path, now: now) > seconds { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    private func age(_ path: String, now: Date) -> TimeInterval {
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else { return 0 }
        return now.timeIntervalSince(modified)
    }
}

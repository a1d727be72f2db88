import FFmpeg
import Foundation
import Highlight
import MediaEngine
import Isolation
import JobMedia
import Logging
import Store
import Telemetry

/// A highlight job's life in media terms, one owner for it: the engine's request built from the
/// job (its options as typed values), recognition of a re-upload, then the analysis, selection
/// and render, or the reuse decision, all in the job's isolated children; and the result to
/// record (`HighlightOutcome`, in the store's terms). The worker (`Workers.JobRunner`) keeps the
/// leases, retries, heartbeats and the hand-off of files to the storage, and knows no engine.
public struct HighlightJobs: Sendable {
    let media: MediaDefaults
    let database: any FingerprintRepository
    let layout: StorageLayout
    let mediaStorage: any MediaStorage
    let clock: @Sendable () -> Date

    public init(
        media: MediaDefaults, database: any FingerprintRepository, layout: StorageLayout, mediaStorage: any MediaStorage,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.media = media; self.database = database; self.layout = layout; self.mediaStorage = mediaStorage
        self.clock = clock
    }

    /// Makes the job's highlight in its children, within `seconds` (its time budget, which holds
    /// for its children together): the keyframe look at earlier uploads when there are candidates,
    /// then the highlight in the same child; or the highlight alone. The job's own files of the
    /// look are removed after, and a new analysis cache entry moved into the account's cache.
    public func make(
        _ job: Job, workspace: JobWorkspace, isolation: IsolationSettings, seconds: Double,
        maxDurationSeconds: Double, token: CancellationToken, onProgress: @escaping @Sendable (String, Double) -> Void,
        stages: JobStageTimer, log: Logger
    ) async -> HighlightAttempt {
        let request = request(for: job, in: workspace, maxDurationSeconds: maxDurationSeconds)
        let children = children(
            for: job, workspace: workspace, isolation: isolation, seconds: seconds, token: token,
            onProgress: onProgress, stages: stages, log: log)
        let (outcome, recognized) = await runChildren(
            job, workspace: workspace, request: request, children: children, token: token, stages: stages, log: log)
        Self.removeRecognitionFiles(workspace)
        keepCacheEntries(workspace, accountId: job.accountId)
        return HighlightAttempt(outcome: HighlightOutcome(outcome), recognized: recognized)
    }

    /// The engine's request for the job: its length, shape, pinned and excluded moments, the
    /// workspace's files, the account's analysis cache and the plan's length limit.
    func request(for job: Job, in workspace: JobWorkspace, maxDurationSeconds: Double) -> HighlightRequest {
        // An encode at the job's quality; `original` is encoded as `high` where it cannot be copied.
        var quality = RenderQuality(rawValue: job.quality.rawValue) ?? .high
        if quality == .high, (job.outputCap ?? 1080) >= RenderQuality.uhd.maxShortSide { quality = .uhd }
        var request = media.request(source: workspace.inputPath, quality: quality)
        // The source's own pictures, copied where the highlight allows (else encoded as `high`).
        if job.quality == .original { request.original = OriginalSettings(maxShortSide: job.outputCap) }
        request.output = workspace.resultPath
        request.posterOutput = workspace.posterPath
        request.analysisOutput = workspace.analysisPath
        // The analysis cache is per account: an identical upload of another account is analysed
        // again, so nothing (not even a shorter processing time) tells one account of another's videos.
        request.cacheDirectory = layout.accountCacheDirectory(job.accountId)
        // The child only reads the cache (other jobs of the account may run at once); a new entry
        // goes to its own folder, and the worker moves it in after (`keepCacheEntries`).
        request.cacheOutputDirectory = workspace.cacheOutputDirectory
        request.selection.targetDuration = Double(job.targetDuration)
        request.analysisData = workspace.analysisDataPath
        request.storyboardOutput = workspace.storyboardPath
        if let edit = job.edit {
            request.aspect = edit.aspect
            request.focus = edit.focus ?? .auto
            request.selection.include = edit.include
            request.selection.exclude = edit.exclude.map { TimeRange(start: $0.start, end: $0.end) }
        }
        // The plan's length limit holds on decoded timestamps, whatever the header claims.
        request.limits = DecodeLimits(maxDecodedSeconds: job.maxDurationSeconds ?? maxDurationSeconds)
        return request
    }

    func children(
        for job: Job, workspace: JobWorkspace, isolation: IsolationSettings, seconds: Double, token: CancellationToken,
        onProgress: @escaping @Sendable (String, Double) -> Void, stages: JobStageTimer, log: Logger
    ) -> JobChildren {
        let cacheDirectory = layout.accountCacheDirectory(job.accountId)
        // The child writes its own job's folder and reads its account's analysis cache (read-only:
        // the account's other jobs may run at once, each as its own user), nothing else of the
        // storage; and it may load the face detector (a library only the analysis loads), from its
        // folder and the libraries beside it (a wheel's "<name>.libs").
        try? FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        chmod(cacheDirectory, 0o755)  // inside Storage/cache (0700): for the children's users only
        let faceLibrary = (media.template.analysis.faces.library as NSString).deletingLastPathComponent
        let access = ChildAccess(
            readable: [cacheDirectory]
                + [faceLibrary, faceLibrary + ".libs"].filter { FileManager.default.fileExists(atPath: $0) },
            writable: [workspace.directory])
        return JobChildren(
            isolation: isolation, access: access, deadline: ContinuousClock.now + .seconds(seconds), token: token,
            onProgress: onProgress, stages: stages, log: log)
    }

    /// Moves the analysis the child wrote for the cache into its account's cache (readable by
    /// the account's later children: 0644, inside Storage/cache, which only this user enters).
    func keepCacheEntries(_ workspace: JobWorkspace, accountId: String) {
        let folder = workspace.cacheOutputDirectory
        let cache = layout.accountCacheDirectory(accountId)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasSuffix(".json") {
            let entry = folder + "/" + name
            chmod(entry, 0o644)
            _ = rename(entry, cache + "/" + name)
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

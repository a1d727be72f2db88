import FFmpeg
import Foundation
import Highlight
import Isolation
import JobMedia
import Logging
import MediaEngine
import Store
import Telemetry

/// The isolated children of one job: the keyframe look at earlier uploads and the highlight,
/// within what is left of the job's time budget (which holds for its children together).
struct JobChildren: Sendable {
    var isolation: IsolationSettings
    var access: ChildAccess
    var deadline: ContinuousClock.Instant
    var token: CancellationToken
    var reporter: ProgressReporter
    var stages: JobStageTimer
    var log: Logger

    /// Runs `task` in a child and hands it to `body` (which may send it a second task); its outcome.
    func run(_ task: ChildTask, _ body: (ChildSession) async -> Void = { _ in }) async -> ChildOutcome {
        let left = max(1, Double((deadline - ContinuousClock.now).components.seconds))
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let (reporter, stages) = (self.reporter, self.stages)
        return await IsolatedChild.withChild(
            task, settings: isolation, access: access, wallSeconds: left,
            cpuSeconds: UInt64(left) * UInt64(max(1, cores)), cancellation: token, logger: log,
            onProgress: { stage, fraction in
                reporter.report(stage: stage, fraction: fraction)
                stages.enter(stage)
            }, body)
    }
}

extension JobRunner {
    func jobChildren(
        for job: Job, workspace: JobWorkspace, token: CancellationToken, reporter: ProgressReporter,
        stages: JobStageTimer, log: Logger
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
            isolation: isolation, access: access,
            deadline: ContinuousClock.now + .seconds(timeBudget(job)), token: token, reporter: reporter,
            stages: stages, log: log)
    }

    /// The job's children: the keyframe look at earlier uploads when there are candidates, then
    /// the highlight in the same child; or the highlight alone.
    func runChildren(
        _ job: Job, workspace: JobWorkspace, request: HighlightRequest, children: JobChildren,
        token: CancellationToken, stages: JobStageTimer, log: Logger
    ) async -> (ChildOutcome, RecognizedReupload?) {
        stages.step("candidates")
        let candidates = await reuploadCandidates(for: job, log: log)
        let look =
            candidates.isEmpty || token.isCancelled
            ? nil
            : recognitionTask(candidates: candidates, workspace: workspace, request: request, log: log)
        guard let look else {
            stages.step("highlight child start")
            return (await children.run(ChildTask.highlight(request)), nil)
        }
        // One child: the keyframe look, then (once this worker has prepared it from the answer) the highlight.
        stages.step("child start")
        // Set once the look has answered: what the worker keeps of a recognised copy (nil when it is none).
        var answered: RecognizedReupload??
        var outcome = await children.run(look) { child in
            for await message in child.messages {
                guard let recognition = message.recognition, child.isInputOpen else { continue }
                let (next, found) = await afterRecognition(
                    recognition, job: job, candidates: candidates, workspace: workspace, request: request,
                    stages: stages, log: log)
                answered = .some(found)
                stages.step("highlight")
                // The next task, prepared from the answer (the child waits for it), then nothing more.
                do { try await child.send(ChildTask.highlight(next)) } catch {
                    log.warning("the child did not take its follow-up task")
                }
                await child.finishInput()
            }
        }
        if let found = answered { return (outcome, found) }
        if case .cancelled = outcome { return (outcome, nil) }  // stopped before the look answered
        // No answer from the look (it failed or died before one): analysed in full, in a new child.
        log.info("re-upload recognition gave no answer; analysing in full", metadata: ["outcome": "\(outcome)"])
        stages.step("highlight child start")
        outcome = await children.run(ChildTask.highlight(request))
        return (outcome, nil)
    }
}

extension JobRunner {
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

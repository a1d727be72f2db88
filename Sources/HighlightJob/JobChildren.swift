import FFmpeg
import Foundation
import Highlight
import MediaEngine
import Isolation
import JobMedia
import Logging
import Store
import Telemetry

/// The isolated children of one job: the keyframe look at earlier uploads and the highlight,
/// within what is left of the job's time budget (which holds for its children together).
struct JobChildren: Sendable {
    var isolation: IsolationSettings
    var access: ChildAccess
    var deadline: ContinuousClock.Instant
    var token: CancellationToken
    var onProgress: @Sendable (String, Double) -> Void
    var stages: JobStageTimer
    var log: Logger

    /// Runs `task` in a child and hands it to `body` (which may send it a second task); its outcome.
    func run(_ task: ChildTask, _ body: (ChildSession<ChildMessage>) async -> Void = { _ in }) async -> ChildOutcome {
        let left = max(1, Double((deadline - ContinuousClock.now).components.seconds))
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let (onProgress, stages) = (self.onProgress, self.stages)
        return await MediaChild.withChild(
            task, settings: isolation, access: access, wallSeconds: left,
            cpuSeconds: UInt64(left) * UInt64(max(1, cores)), cancellation: token, logger: log,
            onProgress: { stage, fraction in
                onProgress(stage, fraction)
                stages.enter(stage)
            }, body)
    }
}

extension HighlightJobs {
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


import FFmpeg
import Foundation
import Highlight
import MediaEngine
import Isolation
import Logging

/// How a job child ended, in media terms.
public enum ChildOutcome: Sendable {
    /// It answered (a probe, a recognition, a highlight result or a preview).
    case answered(ChildMessage)
    /// It reported a media error: the input's fault (not a crash).
    case failed(MediaError)
    /// Stopped on request (cancel or shutdown).
    case cancelled
    /// It died or misbehaved (`IsolatedOutcome.abnormal`): `reason` is for the log.
    case abnormal(reason: String, timedOut: Bool)
    /// A layer of its sandbox could not be set up: the operator's to fix.
    case sandboxUnavailable(reason: String)
}

/// The job child's client: runs `ChildTask`s in the sandbox (`IsolatedChild`) and reads its
/// `ChildMessage`s; a reported failure comes back as the `MediaError` the child met.
public enum MediaChild {
    /// Runs one task in a child, reporting its progress; its answer, failure or end.
    public static func run(
        _ task: ChildTask, settings: IsolationSettings, access: ChildAccess, wallSeconds: Double, cpuSeconds: UInt64,
        cancellation: CancellationToken?, logger: Logger,
        onProgress: @escaping (String, Double) -> Void = { _, _ in }
    ) async -> ChildOutcome {
        await withChild(
            task, settings: settings, access: access, wallSeconds: wallSeconds, cpuSeconds: cpuSeconds,
            cancellation: cancellation, logger: logger, onProgress: onProgress
        ) { child in
            await child.finishInput()
        }
    }

    /// Starts a child on `task` and hands it to `body`, which may send it a second task (a
    /// recognition that `continues`): `IsolatedChild.withChild` with the job child's messages.
    public static func withChild(
        _ task: ChildTask, settings: IsolationSettings, access: ChildAccess, wallSeconds: Double, cpuSeconds: UInt64,
        cancellation: CancellationToken?, logger: Logger,
        onProgress: @escaping (String, Double) -> Void = { _, _ in },
        _ body: (ChildSession<ChildMessage>) async -> Void
    ) async -> ChildOutcome {
        let outcome = await IsolatedChild.withChild(
            task, replies: ChildMessage.self, settings: settings, access: access, wallSeconds: wallSeconds,
            cpuSeconds: cpuSeconds, cancellation: cancellation, logger: logger, onProgress: onProgress, body)
        switch outcome {
        case .answered(let message): return .answered(message)
        case .failed(let message):
            guard let failure = message.failure else {
                return .abnormal(reason: "the child reported a failure it did not describe", timedOut: false)
            }
            return .failed(failure.mediaError(path: task.source))
        case .cancelled: return .cancelled
        case .abnormal(let reason, let timedOut): return .abnormal(reason: reason, timedOut: timedOut)
        case .sandboxUnavailable(let reason): return .sandboxUnavailable(reason: reason)
        }
    }
}

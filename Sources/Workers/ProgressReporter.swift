import Foundation
import MediaVocabulary
import Store
import Synchronization
import Wording

/// Carries progress from the engine thread to the database without slowing the engine: the engine
/// only stores the latest value; a task writes it at most every `interval`. When the write finds
/// the job no longer processing (it was cancelled), the token is cancelled so the engine stops.
final class ProgressReporter: Sendable {
    private struct State { var stage = "starting"; var fraction = 0.0; var written = (stage: "", percent: -1) }
    private let state = Mutex(State())
    let jobID: String
    let worker: String
    let database: any QueueRepository
    let token: CancellationToken
    let interval: Duration
    let clock: @Sendable () -> Date

    init(
        jobID: String, worker: String, database: any QueueRepository, token: CancellationToken, interval: Duration,
        clock: @escaping @Sendable () -> Date
    ) {
        self.jobID = jobID; self.worker = worker; self.database = database; self.token = token;
        self.interval = interval; self.clock = clock
    }

    /// Called by the engine (any thread): cheap.
    func report(stage: String, fraction: Double) {
        state.withLock {
            $0.stage = stage; $0.fraction = fraction
        }
    }

    /// Writes changes until the task is cancelled.
    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            await flush()
        }
    }

    func flush() async {
        let pending: (String, Int)? = state.withLock { s in
            // 99 at most: 100 means the result is stored, which only completion says.
            let percent = min(99, Int(s.fraction * 100))
            guard s.stage != s.written.stage || percent != s.written.percent else { return nil }
            s.written = (s.stage, percent)
            return (s.stage, percent)
        }
        guard let (stage, percent) = pending else { return }
        do {
            let stillRunning = try await database.updateProgress(
                id: jobID, worker: worker, progress: percent, stage: stage,
                message: Self.message(for: stage), now: clock())
            if !stillRunning { token.cancel() }
        } catch {
            // A failed progress write is not worth failing the job for; the next one may succeed.
        }
    }

    static func message(for stage: String) -> String {
        switch stage {
        case "starting": return Say.stageStarting
        case "recognising": return Say.stageRecognising
        case "analysing": return Say.stageAnalysing
        case "selecting": return Say.stageSelecting
        case "rendering": return Say.stageRendering
        case "poster", "storyboard", "done": return Say.stageFinishing
        default: return stage
        }
    }
}

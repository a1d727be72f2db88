import Synchronization

/// Measures one job attempt: the time in each stage (from the engine's stage names), the time the
/// worker spent storing the outcome (`publishing()` to `done()`), the total, and the worker's busy
/// state. `enter(_:)` is called from the engine's progress callback, possibly for every frame: it
/// compares a name and returns, allocating nothing, unless the stage changed.
public final class JobStageTimer: Sendable {
    private struct State {
        var stage: JobStage?
        var since: ContinuousClock.Instant
        var done = false
    }

    private let start: ContinuousClock.Instant
    private let state: Mutex<State>

    init() {
        let now = ContinuousClock.now
        start = now
        state = Mutex(State(stage: nil, since: now))
        WorkerMetrics.busy(1)
    }

    /// The engine's stage name (`analysing`, `selecting`, `rendering`, `poster`, `done`...).
    public func enter(_ engineStage: String) {
        switch engineStage {
        case "recognising", "analysing", "selecting": enter(stage: .analysis)
        case "rendering", "poster": enter(stage: .render)
        case "done": enter(stage: .publish)
        default: break
        }
    }

    /// The engine is done: from now on the worker stores the result and records the outcome.
    public func publishing() { enter(stage: .publish) }

    /// The outcome is recorded: closes the open stage, records the total, frees the worker. Once.
    public func done() {
        let now = ContinuousClock.now
        let (first, closed): (Bool, (JobStage, Duration)?) = state.withLock { state in
            guard !state.done else { return (false, nil) }
            state.done = true
            defer { state.stage = nil }
            return (true, state.stage.map { ($0, now - state.since) })
        }
        guard first else { return }
        if let (stage, elapsed) = closed { JobMetrics.stageHistograms[stage]?.record(elapsed) }
        JobMetrics.stageHistograms[.total]?.record(now - start)
        WorkerMetrics.busy(-1)
    }

    private func enter(stage: JobStage) {
        let closed: (JobStage, Duration)? = state.withLock { state in
            guard !state.done, state.stage != stage else { return nil }
            let now = ContinuousClock.now
            defer { state.stage = stage; state.since = now }
            return state.stage.map { ($0, now - state.since) }
        }
        if let (stage, elapsed) = closed { JobMetrics.stageHistograms[stage]?.record(elapsed) }
    }
}

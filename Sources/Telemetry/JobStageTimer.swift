import Synchronization

/// Measures one job attempt: the time in each stage (from the engine's stage names), the time the
/// worker spent storing the outcome (`publishing()` to `done()`), the total, and the worker's busy
/// state. `enter(_:)` is called from the engine's progress callback, possibly for every frame: it
/// compares a name and returns, allocating nothing, unless the stage changed.
///
/// It also keeps the job's finer steps for its log line (`breakdown`): the worker's own steps
/// (`step(_:)`: fetching the input, the re-upload look, storing the outcome...) and every engine
/// stage by name, each with its time.
public final class JobStageTimer: Sendable {
    private struct State {
        var stage: JobStage?
        var since: ContinuousClock.Instant
        var done = false
        var step: String?
        var stepSince: ContinuousClock.Instant
        var steps: [(name: String, duration: Duration)] = []

        mutating func closeStep(_ now: ContinuousClock.Instant) {
            if let step { steps.append((step, now - stepSince)) }
            step = nil
            stepSince = now
        }
    }

    private let start: ContinuousClock.Instant
    private let state: Mutex<State>

    init() {
        let now = ContinuousClock.now
        start = now
        state = Mutex(State(stage: nil, since: now, stepSince: now))
        WorkerMetrics.busy(1)
    }

    /// The engine's stage name (`analysing`, `selecting`, `rendering`, `poster`, `done`...).
    public func enter(_ engineStage: String) {
        step(engineStage)
        switch engineStage {
        case "recognising", "analysing", "selecting": enter(stage: .analysis)
        case "rendering", "poster": enter(stage: .render)
        case "done": enter(stage: .publish)
        default: break
        }
    }

    /// The engine is done: from now on the worker stores the result and records the outcome.
    public func publishing() {
        step("publish")
        enter(stage: .publish)
    }

    /// A step of the job begins (and the one before it ends): for the breakdown only.
    public func step(_ name: String) {
        state.withLock { state in
            guard !state.done, state.step != name else { return }
            state.closeStep(ContinuousClock.now)
            state.step = name
        }
    }

    /// The steps so far, in order, with their milliseconds: `fetch=12 recognising=230 ...` (the
    /// open step counted up to now; a step entered twice shows twice).
    public var breakdown: String {
        state.withLock { state in
            var steps = state.steps
            if let step = state.step { steps.append((step, ContinuousClock.now - state.stepSince)) }
            return steps.map { "\($0.name)=\(Int(($0.duration / .milliseconds(1)).rounded()))" }.joined(separator: " ")
        }
    }

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

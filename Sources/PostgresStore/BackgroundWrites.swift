import Synchronization

/// Writes a request does not wait for, each on its own task, and a way to await those started so
/// far (`settled`).
final class BackgroundWrites: Sendable {
    private let running = Mutex<(next: Int, tasks: [Int: Task<Void, Never>])>((0, [:]))

    /// Starts `work` on a task of its own; it leaves the list when done.
    func add(_ work: @escaping @Sendable () async -> Void) {
        running.withLock { state in
            let id = state.next
            state.next += 1
            state.tasks[id] = Task.detached { [self] in
                await work()
                running.withLock { _ = $0.tasks.removeValue(forKey: id) }
            }
        }
    }

    /// Returns once every write started before the call has ended.
    func settled() async {
        let tasks = running.withLock { Array($0.tasks.values) }
        for task in tasks { await task.value }
    }
}

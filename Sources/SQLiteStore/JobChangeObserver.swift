import GRDB
import Store
import Synchronization

/// Tells the store's subscribers, after each commit, which jobs changed what their event streams
/// show (status, progress, message, media deleted) or went: SQLite's counterpart of PostgreSQL's
/// `job_changed` trigger. Runs on the writer's queue; keeps only the row ids of the transaction.
final class JobChangeObserver: TransactionObserver, Sendable {
    private let broadcaster: StoreEventBroadcaster
    private let pending = Mutex<(rows: Set<Int64>, deleted: Bool)>(([], false))

    init(broadcaster: StoreEventBroadcaster) { self.broadcaster = broadcaster }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        switch eventKind {
        case .update(let table, let columns):
            table == "job" && !columns.isDisjoint(with: ["status", "progress", "message", "mediaDeletedAt"])
        case .delete(let table): table == "job"
        case .insert: false
        }
    }

    func databaseDidChange(with event: DatabaseEvent) {
        let (kind, row) = (event.kind, event.rowID)
        pending.withLock {
            if kind == .delete { $0.deleted = true } else { $0.rows.insert(row) }
        }
    }

    func databaseDidCommit(_ db: Database) {
        let (rows, deleted) = pending.withLock { state in
            defer { state = ([], false) }
            return (state.rows, state.deleted)
        }
        if deleted { broadcaster.send(.jobChanged(id: nil)) }
        guard !rows.isEmpty else { return }
        let ids = (try? String.fetchAll(db, sql: "SELECT id FROM job WHERE rowid IN (\(rows.map(String.init).joined(separator: ",")))")) ?? []
        if ids.count < rows.count { broadcaster.send(.jobChanged(id: nil)) }
        for id in ids { broadcaster.send(.jobChanged(id: id)) }
    }

    func databaseDidRollback(_ db: Database) {
        pending.withLock { $0 = ([], false) }
    }
}

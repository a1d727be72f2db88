import Synchronization
import Telemetry

/// The uploads whose bodies are being received right now (not yet jobs): how many per account
/// (they count against the plan's jobs at once), how many in all (`upload.maxConcurrent`), and the
/// disk each one has declared and not yet written (so concurrent uploads cannot each pass the
/// free-space floor on the same free bytes). Every `begin` is matched by an `end` on every exit
/// path of the route.
final class UploadRegistry: Sendable {
    struct Ticket: Sendable, Hashable {
        fileprivate let id: Int
        let account: String
    }

    private struct State {
        var nextID = 0
        var perAccount: [String: Int] = [:]
        /// Uploads past the account's checks, receiving their bodies: declared and written bytes.
        var receiving: [Int: (declared: Int64, written: Int64)] = [:]
    }

    let maxConcurrent: Int
    private let state = Mutex(State())

    /// `maxConcurrent` 0: no server-wide cap.
    init(maxConcurrent: Int) { self.maxConcurrent = maxConcurrent }

    /// Registers an upload of `account` before its checks; `others`: the account's other uploads
    /// in progress (they count as jobs against the plan's jobs at once).
    func begin(account: String) -> (ticket: Ticket, others: Int) {
        state.withLock { state in
            state.nextID += 1
            let others = state.perAccount[account, default: 0]
            state.perAccount[account] = others + 1
            return (Ticket(id: state.nextID, account: account), others)
        }
    }

    /// Registers an append to a resumable upload (the account's resumable uploads are counted from
    /// the database, not here).
    func beginAppend() -> Ticket {
        state.withLock { state in
            state.nextID += 1
            return Ticket(id: state.nextID, account: "")
        }
    }

    /// The upload passed the account's checks and will receive a body of `declaredBytes` (0 when
    /// unknown): false when the server-wide cap is reached.
    func startReceiving(_ ticket: Ticket, declaredBytes: Int64) -> Bool {
        let started = state.withLock { state in
            if maxConcurrent > 0 && state.receiving.count >= maxConcurrent { return false }
            state.receiving[ticket.id] = (max(0, declaredBytes), 0)
            return true
        }
        if started { UploadMetrics.started() }
        return started
    }

    /// The upload has written `bytes` of its file so far.
    func wrote(_ ticket: Ticket, bytes: Int64) {
        let added = state.withLock { state -> Int64 in
            guard let before = state.receiving[ticket.id]?.written else { return 0 }
            state.receiving[ticket.id]?.written = bytes
            return bytes - before
        }
        UploadMetrics.received(bytes: added)
    }

    /// Declared bytes not yet written, summed over the uploads in progress (without `excluded`).
    func outstandingBytes(excluding excluded: Ticket? = nil) -> Int64 {
        state.withLock { state in
            state.receiving.reduce(0) { sum, entry in
                entry.key == excluded?.id ? sum : sum + max(0, entry.value.declared - entry.value.written)
            }
        }
    }

    func end(_ ticket: Ticket) {
        let wasReceiving = state.withLock { state -> Bool in
            let wasReceiving = state.receiving.removeValue(forKey: ticket.id) != nil
            if state.perAccount[ticket.account] != nil {
                let left = state.perAccount[ticket.account, default: 1] - 1
                state.perAccount[ticket.account] = left > 0 ? left : nil
            }
            return wasReceiving
        }
        if wasReceiving { UploadMetrics.ended() }
    }
}

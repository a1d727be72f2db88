import HTTPTypes
import HTTPEdge
import Hummingbird
import Logging
import Requests
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
        /// A plain upload (counted in `perAccount`), not an append.
        fileprivate var countsAsUpload = true
    }

    private struct State {
        var nextID = 0
        var perAccount: [String: Int] = [:]
        /// Uploads past the account's checks, receiving their bodies: declared and written bytes.
        var receiving: [Int: (declared: Int64, written: Int64)] = [:]
        /// Bodies being received, per account (plain uploads and appends).
        var receivingPerAccount: [String: Int] = [:]
    }

    let maxConcurrent: Int
    /// Bodies one account may have received at once (a share of `maxConcurrent`), so one
    /// account's slow requests cannot take every server-wide slot. 0: no per-account cap.
    let maxPerAccount: Int
    private let state = Mutex(State())

    /// `maxConcurrent` 0: no server-wide cap. `perAccount` 0: a quarter of `maxConcurrent` (at
    /// least 1); negative: no per-account cap.
    init(maxConcurrent: Int, perAccount: Int = 0) {
        self.maxConcurrent = maxConcurrent
        if perAccount > 0 {
            maxPerAccount = maxConcurrent > 0 ? min(perAccount, maxConcurrent) : perAccount
        } else if perAccount == 0 && maxConcurrent > 0 {
            maxPerAccount = max(1, maxConcurrent / 4)
        } else {
            maxPerAccount = 0
        }
    }

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

    /// Registers an append to a resumable upload of `account` (the account's resumable uploads
    /// count against its plan from the database, not here; its bodies received at once do).
    func beginAppend(account: String) -> Ticket {
        state.withLock { state in
            state.nextID += 1
            return Ticket(id: state.nextID, account: account, countsAsUpload: false)
        }
    }

    enum Refusal: Error, Equatable {
        /// Every server-wide slot is taken.
        case serverBusy
        /// The account has its share of the slots.
        case accountBusy(limit: Int)
    }

    /// The upload passed the account's checks and will receive a body of `declaredBytes` (0 when
    /// unknown), unless the server-wide cap or the account's share of it is reached.
    func tryStartReceiving(_ ticket: Ticket, declaredBytes: Int64) -> Refusal? {
        let refusal = state.withLock { state -> Refusal? in
            if maxPerAccount > 0 && state.receivingPerAccount[ticket.account, default: 0] >= maxPerAccount {
                return .accountBusy(limit: maxPerAccount)
            }
            if maxConcurrent > 0 && state.receiving.count >= maxConcurrent { return .serverBusy }
            state.receiving[ticket.id] = (max(0, declaredBytes), 0)
            state.receivingPerAccount[ticket.account, default: 0] += 1
            return nil
        }
        if refusal == nil { UploadMetrics.started() }
        return refusal
    }

    /// `tryStartReceiving`, thrown as the refusal the client reads: 503 when the server is full,
    /// 429 when this account already sends its share of bodies at once.
    func startReceiving(_ ticket: Ticket, declaredBytes: Int64, logger: Logger, resumable: Bool = false) throws {
        switch tryStartReceiving(ticket, declaredBytes: declaredBytes) {
        case nil:
            return
        case .serverBusy:
            logger.notice("upload refused: server-wide upload cap reached", metadata: ["limit": "\(maxConcurrent)"])
            throw Requests.Refusal.serverBusy(resumable: resumable)
        case .accountBusy(let limit):
            logger.notice(
                "upload refused: the account's share of upload slots is taken", metadata: ["limit": "\(limit)"])
            throw Requests.Refusal.tooManyUploads(limit: limit, resumable: resumable)
        }
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
            if wasReceiving {
                let left = state.receivingPerAccount[ticket.account, default: 1] - 1
                state.receivingPerAccount[ticket.account] = left > 0 ? left : nil
            }
            if ticket.countsAsUpload, state.perAccount[ticket.account] != nil {
                let left = state.perAccount[ticket.account, default: 1] - 1
                state.perAccount[ticket.account] = left > 0 ? left : nil
            }
            return wasReceiving
        }
        if wasReceiving { UploadMetrics.ended() }
    }
}

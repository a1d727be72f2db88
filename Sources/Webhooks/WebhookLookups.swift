import Foundation
import Requests
import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How webhook hosts are looked up and judged: the system resolver and the special-purpose
/// registry in production; tests put a resolver of their own here (and may count a stand-in
/// address as public).
public struct WebhookNetwork: Sendable {
    /// The numeric addresses `host` resolves to. May block (it runs on a thread of its own,
    /// never on the cooperative pool).
    public var resolve: @Sendable (_ host: String) throws -> [String]
    /// Nil for an address a webhook may go to; otherwise what it is (see SpecialPurposeAddresses).
    public var classify: @Sendable (_ address: String) -> String?

    public init(
        resolve: @escaping @Sendable (_ host: String) throws -> [String],
        classify: @escaping @Sendable (_ address: String) -> String? = { SpecialPurposeAddresses.classify($0) }
    ) {
        self.resolve = resolve; self.classify = classify
    }

    public static let system = WebhookNetwork(resolve: { try SystemResolver.addresses(of: $0) })
}

/// How webhook address lookups share the process: how many may be waited for at once (in all and
/// per account), how many may still be in the resolver (getaddrinfo cannot be stopped: a lookup
/// given up goes on on its thread until the resolver's own timeouts end it, about 10 s per name
/// server with glibc's defaults), and how long a caller waits for one (`deadline`). One account's
/// slow names use up its own share and never another account's registrations or deliveries; a
/// lookup given up (its deadline passed, or its caller went away) frees its slot at once, and only
/// its thread stays counted, against the same account.
public final class WebhookLookupBudget: Sendable {
    /// Lookups waited for at once, in all.
    public let total: Int
    /// Lookups waited for at once by one account.
    public let perAccount: Int
    /// Lookups still in the resolver (waited for or given up), in all.
    public let maxThreads: Int
    /// Lookups still in the resolver for one account.
    public let threadsPerAccount: Int
    /// The longest a caller waits for a lookup: registration answers then that the host did not
    /// resolve in time, and a delivery attempt ends. Before, registration had no deadline: a
    /// request stayed open for as long as the resolver took, and its slot stayed taken when the
    /// client gave up (measured: while one account ran 80 slow lookups, another account's
    /// registration got no answer in 30 s).
    public let deadline: Duration

    struct State {
        var waiting = 0
        var waitingBy: [String: Int] = [:]
        var threads = 0
        var threadsBy: [String: Int] = [:]
    }

    let state = Mutex(State())

    /// The process's budget (registration and delivery share it).
    public static let shared = WebhookLookupBudget()

    /// `maxThreads` and `threadsPerAccount` default to four times `total` and `perAccount`: room
    /// for a few rounds of given-up lookups while the resolver ends them.
    public init(
        total: Int = 64, perAccount: Int = 4, maxThreads: Int? = nil, threadsPerAccount: Int? = nil,
        deadline: Duration = .seconds(5)
    ) {
        self.total = max(1, total)
        self.perAccount = max(1, perAccount)
        self.maxThreads = max(self.total, maxThreads ?? 4 * self.total)
        self.threadsPerAccount = max(self.perAccount, threadsPerAccount ?? 4 * self.perAccount)
        self.deadline = deadline
    }

    /// Lookups being waited for now (all accounts).
    public var waiting: Int { state.withLock { $0.waiting } }
    /// Lookups still in the resolver now, given up or not (all accounts).
    public var inResolver: Int { state.withLock { $0.threads } }

    enum Refusal: Error { case serverBusy, accountBusy }

    /// Takes a slot and a thread for `account`.
    func admit(_ account: String) throws(Refusal) {
        let refusal: Refusal? = state.withLock { state in
            if state.waitingBy[account, default: 0] >= perAccount { return .accountBusy }
            if state.threadsBy[account, default: 0] >= threadsPerAccount { return .accountBusy }
            if state.waiting >= total || state.threads >= maxThreads { return .serverBusy }
            state.waiting += 1
            state.waitingBy[account, default: 0] += 1
            state.threads += 1
            state.threadsBy[account, default: 0] += 1
            return nil
        }
        if let refusal { throw refusal }
    }

    /// The caller stopped waiting (answered, given up or gone).
    func releaseSlot(_ account: String) {
        state.withLock { state in
            state.waiting -= 1
            let left = state.waitingBy[account, default: 1] - 1
            state.waitingBy[account] = left > 0 ? left : nil
        }
    }

    /// The resolver returned.
    func releaseThread(_ account: String) {
        state.withLock { state in
            state.threads -= 1
            let left = state.threadsBy[account, default: 1] - 1
            state.threadsBy[account] = left > 0 ? left : nil
        }
    }
}

/// Why a lookup gave no address.
enum WebhookLookupError: Error {
    case serverBusy, accountBusy
    /// The name does not resolve (or the resolver failed).
    case failed
    /// No answer within the budget's deadline.
    case timedOut
    /// The caller stopped waiting (its task was cancelled: its own deadline passed, or the client
    /// went away).
    case cancelled
}

extension WebhookNetwork {
    /// Resolves `host` for `account` within `budget`, on a thread of its own (one per admitted
    /// lookup, so an admitted lookup never waits behind another, given up or not). The caller
    /// waits at most the budget's deadline, and less when its task is cancelled; either way its
    /// slot is free again at once, while the thread stays counted until getaddrinfo returns.
    func lookup(_ host: String, account: String, budget: WebhookLookupBudget) async throws(WebhookLookupError)
        -> [String]
    {
        if Task.isCancelled { throw .cancelled }
        do {
            try budget.admit(account)
        } catch {
            switch error {
            case .serverBusy: throw .serverBusy
            case .accountBusy: throw .accountBusy
            }
        }
        defer { budget.releaseSlot(account) }
        let waiter = LookupWaiter()
        let resolve = self.resolve
        let thread = Thread {
            let result: Result<[String], WebhookLookupError>
            do {
                result = .success(try resolve(host))
            } catch { result = .failure(.failed) }
            budget.releaseThread(account)
            waiter.finish(result)
        }
        thread.name = "webhook-lookup"
        thread.start()
        let limit = budget.deadline
        let timer = Task {
            do { try await Task.sleep(for: limit) } catch { return }
            waiter.finish(.failure(.timedOut))
        }
        defer { timer.cancel() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in waiter.install(continuation) }
        } onCancel: {
            waiter.finish(.failure(.cancelled))
        }
        return try result.get()
    }
}

/// The one answer a lookup's waiter gets: the resolver's, the deadline's or the cancellation's,
/// whichever comes first.
final class LookupWaiter: Sendable {
    typealias Outcome = Result<[String], WebhookLookupError>

    struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var outcome: Outcome?
    }

    let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<Outcome, Never>) {
        let ready: Outcome? = state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(returning: ready) }
    }

    func finish(_ outcome: Outcome) {
        let waiting: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            if state.outcome != nil { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        waiting?.resume(returning: outcome)
    }
}

/// getaddrinfo, blocking: call it off the cooperative pool (a lookup's own thread).
public enum SystemResolver {
    public static func addresses(of host: String) throws -> [String] {
        try query(host, hints: streamHints(flags: 0))
    }

    /// The address `host` spells when it is numeric in any form the C library accepts
    /// ("127.0.0.1", "2130706433", "::1"); nil for a name. Never asks DNS.
    public static func numeric(_ host: String) -> String? {
        (try? query(host, hints: streamHints(flags: AI_NUMERICHOST)))?.first
    }

    /// Stream-socket addresses of either family.
    static func streamHints(flags: Int32) -> addrinfo {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = flags
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        return hints
    }

    struct Failed: Error {}

    static func query(_ host: String, hints: addrinfo) throws -> [String] {
        var hints = hints
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { throw Failed() }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let address = info.pointee.ai_addr, let text = text(address, family: info.pointee.ai_family),
                !addresses.contains(text)
            {
                addresses.append(text)
            }
            cursor = info.pointee.ai_next
        }
        return addresses
    }

    static func text(_ address: UnsafeMutablePointer<sockaddr>, family: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch family {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var addr = sin.pointee.sin_addr
                guard inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
                return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                var addr = sin6.pointee.sin6_addr
                guard inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
                return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        default:
            return nil
        }
    }
}

import Foundation
import NIOPosix
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
    /// The numeric addresses `host` resolves to. May block (it runs on a thread of the lookup
    /// budget's pool, never on the cooperative pool).
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

/// How many address lookups may run at once: in all (each holds a thread while getaddrinfo
/// blocks, up to the resolver's timeouts) and per account, so one account's slow names use up its
/// own share and never another account's registrations or deliveries.
public final class WebhookLookupBudget: Sendable {
    public let total: Int
    public let perAccount: Int

    struct State {
        var running = 0
        var byAccount: [String: Int] = [:]
    }

    let state = Mutex(State())
    private let pool = Mutex<NIOThreadPool?>(nil)

    /// The process's budget (registration and delivery share it).
    public static let shared = WebhookLookupBudget()

    public init(total: Int = 64, perAccount: Int = 4) {
        self.total = max(1, total); self.perAccount = max(1, perAccount)
    }

    /// Lookups running now (all accounts).
    public var running: Int { state.withLock { $0.running } }

    enum Refusal: Error { case serverBusy, accountBusy }

    func admit(_ account: String) throws(Refusal) {
        let refusal: Refusal? = state.withLock { state in
            if state.byAccount[account, default: 0] >= perAccount { return .accountBusy }
            if state.running >= total { return .serverBusy }
            state.running += 1
            state.byAccount[account, default: 0] += 1
            return nil
        }
        if let refusal { throw refusal }
    }

    /// The threads lookups block on, started at the first lookup: one per lookup the budget
    /// admits, so an admitted lookup never waits for another (nor for NIO's shared blocking pool).
    var threads: NIOThreadPool {
        pool.withLock { pool in
            if let pool { return pool }
            let made = NIOThreadPool(numberOfThreads: total)
            made.start()
            pool = made
            return made
        }
    }

    deinit {
        pool.withLock { $0 }?.shutdownGracefully { _ in }
    }

    func release(_ account: String) {
        state.withLock { state in
            state.running -= 1
            let left = state.byAccount[account, default: 1] - 1
            state.byAccount[account] = left > 0 ? left : nil
        }
    }
}

/// Why a lookup gave no address.
enum WebhookLookupError: Error {
    case serverBusy, accountBusy
    /// The name does not resolve (or the resolver failed).
    case failed
    /// The caller stopped waiting (its deadline passed); the lookup itself runs on to its end.
    case cancelled
}

extension WebhookNetwork {
    /// Resolves `host` for `account` within `budget`: on a thread of the budget's pool; the
    /// caller's task may be cancelled meanwhile (it stops waiting; the lookup keeps its share of
    /// the budget until getaddrinfo returns).
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
        let waiter = LookupWaiter()
        let resolve = self.resolve
        budget.threads.submit { state in
            let result: Result<[String], WebhookLookupError>
            do {
                guard state == .active else { throw SystemResolver.Failed() }
                result = .success(try resolve(host))
            } catch { result = .failure(.failed) }
            budget.release(account)
            waiter.finish(result)
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in waiter.install(continuation) }
        } onCancel: {
            waiter.finish(.failure(.cancelled))
        }
        return try result.get()
    }
}

/// The one answer a lookup's waiter gets: the resolver's or the cancellation's, whichever comes first.
final class LookupWaiter: Sendable {
    typealias Outcome = Result<[String], WebhookLookupError>

    struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var early: Outcome?
        var done = false
    }

    let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<Outcome, Never>) {
        let ready: Outcome? = state.withLock { state in
            if let early = state.early {
                state.done = true
                return early
            }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(returning: ready) }
    }

    func finish(_ outcome: Outcome) {
        let waiting: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            if state.done || state.early != nil { return nil }
            if let continuation = state.continuation {
                state.continuation = nil
                state.done = true
                return continuation
            }
            state.early = outcome
            return nil
        }
        waiting?.resume(returning: outcome)
    }
}

/// getaddrinfo, blocking: call it off the cooperative pool (a lookup budget's threads).
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

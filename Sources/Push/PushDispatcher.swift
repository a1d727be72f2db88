import Foundation
import Store
import Logging
import MomentsConfig
import ServiceLifecycle
import Synchronization
import Telemetry

/// Sends the push outbox to APNs: claims due pushes (leased, so dispatchers in several processes
/// send each push once), sends each with the shared provider token, and records the answer:
/// 200 sent; 410 Unregistered or 400 BadDeviceToken: the device is removed; 403
/// ExpiredProviderToken: a new token and one immediate retry; 429, 5xx and no answer: tried again
/// after `apns.retryBackoffSeconds`·2^(n−1), for an hour after the job's end; anything else is
/// given up. Runs beside the webhook dispatcher in every process running the job runner, on its own
/// tasks: a stalled or refusing APNs holds only its pushes, never jobs or webhooks.
public final class PushDispatcher: Service, Sendable {
    let database: any PushRepository & StoreEventSource
    let client: APNsClient
    let settings: PushSettings
    let logger: Logger
    let clock: @Sendable () -> Date
    /// This dispatcher's lease owner name.
    let worker: String

    /// A claimed push is this dispatcher's for this long: derived from the client's deadline for
    /// an attempt of two sends (an expired provider token is replaced and the push sent again), so
    /// the push is never claimed again while a send may still be in flight (60 s with the 10 s
    /// deadline). Before, the lease was 60 s and a send had no end: a trickled answer was sent again.
    public var leaseSeconds: Double { client.deadline.leaseSeconds(sends: Self.sendsPerAttempt) }
    /// Sends one attempt may make.
    static let sendsPerAttempt = 2
    /// Pushes claimed at once.
    static let batch = 32
    /// Pushes being sent at once, at most (multiplexed over the HTTP/2 connection).
    static let maxInFlight = 128
    private let inFlight = Atomic<Int>(0)
    /// How often the outbox is looked at when no store event woke the dispatcher (retries coming due).
    static let pollSeconds = 1.0

    public init(
        database: any PushRepository & StoreEventSource, client: APNsClient, settings: PushSettings, worker: String, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database; self.client = client; self.settings = settings; self.worker = worker
        self.logger = logger; self.clock = clock
    }

    /// A service of the process: sends until graceful shutdown (after the workers, which
    /// may still queue deliveries as they finish; the outbox is durable, so the rest go later).
    public func run() async {
        await cancelWhenGracefulShutdown { await self.deliverUntilCancelled() }
    }

    /// Sends until the task is cancelled. Each push is sent by a task of its own, and more are
    /// claimed as soon as there is room: a push APNs is slow to answer (up to the client's
    /// deadline, 10 s, for the whole send) holds up no other push, up to `maxInFlight` at once,
    /// and its slot is free again at the deadline.
    public func deliverUntilCancelled() async {
        let (bell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let events = database.events()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in events where event == .pushQueued { ring.yield() }
            }
            group.addTask {
                while !Task.isCancelled {
                    ring.yield()
                    try? await Task.sleep(for: .seconds(Self.pollSeconds))
                }
            }
            for await _ in bell {
                if Task.isCancelled { break }
                while !Task.isCancelled {
                    let room = min(Self.batch, Self.maxInFlight - inFlight.load(ordering: .relaxed))
                    guard room > 0, let claimed = await claim(limit: room) else { break }
                    for push in claimed {
                        inFlight.add(1, ordering: .relaxed)
                        group.addTask {
                            await self.attempt(push)
                            self.inFlight.subtract(1, ordering: .relaxed)
                            ring.yield()
                        }
                    }
                    if claimed.count < room { break }
                }
            }
            group.cancelAll()
        }
    }

    /// Pushes due now, leased to this dispatcher; nil when none (or the outbox cannot be read).
    func claim(limit: Int) async -> [PushDelivery]? {
        do {
            let claimed = try await database.claimDuePushes(
                worker: worker, leaseSeconds: leaseSeconds, limit: limit, now: clock())
            return claimed.isEmpty ? nil : claimed
        } catch is CancellationError {
            return nil
        } catch {
            logger.error("cannot read the push outbox", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Sends every push due now, a batch at a time, waiting for each batch (tools and tests; `run`
    /// does not wait). Returns how many were attempted.
    @discardableResult
    public func sendDue() async -> Int {
        var attempted = 0
        while !Task.isCancelled {
            guard let claimed = await claim(limit: Self.batch) else { break }
            await withTaskGroup(of: Void.self) { group in
                for push in claimed { group.addTask { await self.attempt(push) } }
            }
            attempted += claimed.count
            if claimed.count < Self.batch { break }
        }
        return attempted
    }

    /// One attempt at one push (two sends when the provider token had expired), recorded.
    func attempt(_ push: PushDelivery) async {
        var answer: APNsAnswer
        if clock().timeIntervalSince(push.createdAt) > PushSchedule.maxAge {
            answer = APNsAnswer(statusCode: nil, reason: "expired")
        } else {
            var jwt: String?
            (answer, jwt) = await client.send(
                payload: push.payload, token: push.token, environment: push.environment,
                collapseId: push.jobId, now: clock())
            if answer.statusCode == 403, answer.reason == "ExpiredProviderToken", let used = jwt {
                PushMetrics.failed(reason: "ExpiredProviderToken")
                await client.tokens.expired(used)
                (answer, jwt) = await client.send(
                    payload: push.payload, token: push.token, environment: push.environment,
                    collapseId: push.jobId, now: clock())
            }
        }
        // Stopped by shutdown mid-send: nothing is recorded; the lease runs out and another
        // dispatcher (or this process's successor) sends it.
        if Task.isCancelled { return }
        let outcome = self.outcome(of: answer, push: push)
        if outcome == .sent { PushMetrics.sent() } else { PushMetrics.failed(reason: answer.reason ?? "other") }
        do {
            let held = try await database.recordPushAttempt(
                id: push.id, worker: worker, outcome: outcome, statusCode: answer.statusCode,
                reason: answer.reason, now: clock())
            if !held { logger.notice("push no longer held by this dispatcher", metadata: ["push": "\(push.id)"]) }
        } catch is CancellationError {
        } catch {
            logger.error("cannot record a push attempt", metadata: ["push": "\(push.id)", "error": "\(error)"])
        }
        switch outcome {
        case .sent, .retry: break
        case .deviceGone:
            logger.info(
                "APNs no longer knows a device; removed",
                metadata: ["account": "\(push.accountId)", "reason": "\(answer.reason ?? "")"])
        case .gaveUp:
            logger.warning(
                "push given up",
                metadata: [
                    "push": "\(push.id)", "job": "\(push.jobId)",
                    "status": "\(answer.statusCode.map(String.init) ?? "none")",
                    "reason": "\(answer.reason ?? "")"
                ])
        }
    }

    /// What an answer means for the push.
    func outcome(of answer: APNsAnswer, push: PushDelivery) -> PushOutcome {
        switch answer.statusCode {
        case 200?:
            return .sent
        case 410?:
            return .deviceGone
        case 400? where answer.reason == "BadDeviceToken":
            return .deviceGone
        case let code? where code == 429 || code >= 500 || (code == 403 && answer.reason == "ExpiredProviderToken"):
            return retry(push)
        case nil where answer.reason != "expired":
            return retry(push)
        default:
            return .gaveUp
        }
    }

    func retry(_ push: PushDelivery) -> PushOutcome {
        guard
            let next = PushSchedule.nextAttempt(
                after: push.attempts + 1, base: settings.retryBackoffSeconds, createdAt: push.createdAt,
                now: clock())
        else { return .gaveUp }
        return .retry(at: next)
    }
}

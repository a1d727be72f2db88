import AsyncHTTPClient
import Foundation
import Logging
import MomentsConfig
import NIOCore
import ServiceLifecycle
import Store
import Synchronization
import Telemetry
import Wording

/// Delivers the webhook outbox: claims due deliveries (leased, so dispatchers in several processes
/// share the work; the store hands out at most one delivery per account at a time, so a slow
/// endpoint holds up only its own account's deliveries), checks the endpoint's address again (DNS
/// may have changed since it was registered) and connects to the very address it checked, POSTs
/// the signed event with no redirects followed, within one deadline for the whole attempt (lookup,
/// connection, the answer's head, and the answer's body dropped unread and the connection closed),
/// and records the attempt: 2xx delivered; anything else tried again after
/// `webhooks.retryBackoffSeconds`·2^(n−1) (at most an hour) until 24 h after the event, then
/// given up. Attempts run side by side (up to `maxInFlight`); a finished one makes room for the
/// next at once (no round waits for its slowest attempt). Accounts whose endpoint is failing share
/// `maxFailingInFlight` of those slots, so however many accounts point at endpoints that time out,
/// the others' deliveries find a slot at once. Runs in every process that runs the job runner
/// (`moments serve` and `moments worker`), woken by the store's `webhookQueued` event and every
/// `webhooks.pollSeconds`.
public final class WebhookDispatcher: Service, Sendable {
    let database: any WebhookRepository & StoreEventSource
    let settings: WebhookSettings
    /// The public origin, for the `result_url` of completed jobs.
    let baseURL: String
    let logger: Logger
    let clock: @Sendable () -> Date
    /// This dispatcher's lease owner name.
    let worker: String
    let checker: Mutex<WebhookTargetChecker>
    /// Attempts running now: in all, and of those for accounts whose endpoint is failing.
    let inFlight = Mutex<(all: Int, failing: Int)>((0, 0))

    /// The longest an attempt may take: address lookup, connection, TLS, request, the answer's
    /// head, and closing the connection with the body unread. An attempt's slot is free again
    /// at the deadline whatever the endpoint does.
    public let deadline: AttemptDeadline
    /// The default deadline.
    public static let defaultDeadline = AttemptDeadline(.seconds(10))
    /// A claimed delivery is this dispatcher's for this long: derived from the deadline, so a
    /// delivery is never claimed again while an attempt at it may still be in flight (40 s with
    /// the 10 s deadline).
    public var leaseSeconds: Double { deadline.leaseSeconds() }
    /// Attempts running at once (each to another account's endpoint).
    public static let maxInFlight = 32
    /// Attempts for accounts whose endpoint is failing, at most, of `maxInFlight`: a quarter. The
    /// other 24 slots stay for endpoints that answer. Before, 32 accounts with endpoints that
    /// never answered held all 32 slots for 10 s at a time, again at each retry, and every other
    /// account's delivery waited for one to end.
    public static let maxFailingInFlight = 8
    /// Deliveries claimed at once by `deliverDue`.
    static let batch = 16

    /// What endpoints' signing secrets are sealed under in the store (`ServerSecret.seal`).
    public let secret: ServerSecret
    /// The purpose endpoints' signing secrets are sealed for.
    public static let secretPurpose = "webhook-secrets"

    public init(
        database: any WebhookRepository & StoreEventSource, settings: WebhookSettings, baseURL: String, worker: String, secret: ServerSecret,
        logger: Logger, deadline: AttemptDeadline = WebhookDispatcher.defaultDeadline,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database; self.settings = settings; self.baseURL = baseURL; self.worker = worker
        self.secret = secret; self.logger = logger; self.clock = clock; self.deadline = deadline
        checker = Mutex(WebhookTargetChecker(allowPrivate: settings.allowPrivateTargets))
    }

    /// How endpoint URLs are checked (registration uses it too, so both share one lookup budget).
    public var targets: WebhookTargetChecker {
        get { checker.withLock { $0 } }
        set { checker.withLock { $0 = newValue } }
    }

    /// A service of the process: delivers until graceful shutdown (after the workers, which
    /// may still queue deliveries as they finish; the outbox is durable, so the rest go later).
    public func run() async {
        await cancelWhenGracefulShutdown { await self.deliverUntilCancelled() }
    }

    /// Delivers until the task is cancelled.
    public func deliverUntilCancelled() async {
        let (bell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let events = database.events()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events where event == .webhookQueued { ring.yield() }
            }
            group.addTask {
                while !Task.isCancelled {
                    ring.yield()
                    try? await Task.sleep(for: .seconds(self.settings.pollSeconds))
                }
            }
            group.addTask {
                await withDiscardingTaskGroup { attempts in
                    for await _ in bell {
                        if Task.isCancelled { break }
                        // Claims what there is room for; each attempt rings the bell when it ends.
                        while !Task.isCancelled {
                            let (room, failingRoom) = self.inFlight.withLock { running in
                                (
                                    Self.maxInFlight - running.all,
                                    min(Self.maxInFlight - running.all, Self.maxFailingInFlight - running.failing)
                                )
                            }
                            if room <= 0 { break }
                            let claimed = await self.claim(limit: room, failingLimit: failingRoom)
                            for item in claimed {
                                self.inFlight.withLock {
                                    $0.all += 1
                                    if item.failing { $0.failing += 1 }
                                }
                                attempts.addTask {
                                    await self.attempt(item)
                                    self.inFlight.withLock {
                                        $0.all -= 1
                                        if item.failing { $0.failing -= 1 }
                                    }
                                    ring.yield()
                                }
                            }
                            if claimed.count < room { break }
                        }
                    }
                }
            }
            // Every child runs until the task is cancelled (the store's event stream may end
            // first, when the store closes: polling goes on).
        }
    }

    /// Attempts running now for accounts whose endpoint is failing.
    public var failingInFlight: Int { inFlight.withLock { $0.failing } }

    /// Due deliveries, at most `limit`, of which at most `failingLimit` for failing endpoints
    /// (none when the store cannot be read: the next bell tries again).
    func claim(limit: Int, failingLimit: Int) async -> [ClaimedWebhook] {
        do {
            return try await database.claimDueWebhooks(
                worker: worker, leaseSeconds: leaseSeconds, limit: limit, failingLimit: max(0, failingLimit),
                now: clock())
        } catch is CancellationError {
            return []
        } catch {
            logger.error("cannot read the webhook outbox", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Attempts every delivery due now, a batch at a time (one per account each time), and waits
    /// for them. Returns how many were attempted.
    @discardableResult
    public func deliverDue() async -> Int {
        var attempted = 0
        var seen: Set<String> = []
        while !Task.isCancelled {
            // Each delivery once per call (a failed one may come due again meanwhile).
            let claimed = await claim(limit: Self.batch, failingLimit: Self.batch)
            if claimed.isEmpty || claimed.allSatisfy({ seen.contains($0.delivery.id) }) { break }
            seen.formUnion(claimed.map(\.delivery.id))
            await withTaskGroup(of: Void.self) { group in
                for item in claimed { group.addTask { await self.attempt(item) } }
            }
            attempted += claimed.count
        }
        return attempted
    }

    /// One attempt at one delivery, recorded with its outcome.
    func attempt(_ claimed: ClaimedWebhook) async {
        let delivery = claimed.delivery
        let started = clock()
        let timer = ContinuousClock.now
        var statusCode: Int?
        var failure: String?
        if let endpoint = claimed.endpoint {
            do {
                let body = try self.body(of: delivery)
                statusCode = try await post(body, delivery: delivery, endpoint: endpoint)
                if let code = statusCode, (300..<400).contains(code) {
                    failure = Say.webhookRedirected(status: code)
                }
            } catch let refusal as WebhookTargetRefusal {
                failure = refusal.detail
            } catch {
                failure = describe(error)
                logger.info("webhook attempt failed", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
            }
        } else {
            failure = "the account's webhook endpoint was removed"
        }
        // Stopped by shutdown mid-attempt: nothing is recorded; the lease runs out and the
        // delivery is attempted again (by this process's successor or another one).
        if Task.isCancelled { return }
        let elapsed = ContinuousClock.now - timer
        let durationMs = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        let outcome: WebhookOutcome
        if let code = statusCode, (200..<300).contains(code) {
            outcome = .delivered
        } else if claimed.endpoint == nil {
            outcome = .gaveUp
        } else if let next = WebhookSchedule.nextAttempt(
            after: delivery.attempts + 1, base: settings.retryBackoffSeconds,
            createdAt: delivery.createdAt, now: clock())
        {
            outcome = .retry(at: next)
        } else {
            outcome = .gaveUp
        }
        let attempt = WebhookAttempt(
            deliveryId: delivery.id, number: delivery.attempts + 1, at: started, statusCode: statusCode,
            error: failure, durationMs: durationMs)
        do {
            let held = try await database.recordWebhookAttempt(attempt, worker: worker, outcome: outcome, now: clock())
            if held {
                switch outcome {
                case .delivered: WebhookMetrics.attempted(.delivered)
                case .retry: WebhookMetrics.attempted(.retried)
                case .gaveUp: WebhookMetrics.attempted(.gaveUp)
                }
            } else {
                logger.notice(
                    "webhook delivery no longer held by this dispatcher", metadata: ["delivery": "\(delivery.id)"])
            }
            if outcome == .gaveUp {
                logger.warning(
                    "webhook delivery given up",
                    metadata: [
                        "delivery": "\(delivery.id)", "job": "\(delivery.jobId)",
                        "attempts": "\(attempt.number)"
                    ])
            }
        } catch is CancellationError {
            // Shutdown: the lease runs out and the delivery is attempted again.
        } catch {
            // The lease runs out and the delivery is attempted again: at least once.
            logger.error(
                "cannot record a webhook attempt", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
        }
    }

    /// The signed body: the stored event with the completed job's `result_url` filled in.
    func body(of delivery: WebhookDelivery) throws -> String {
        var payload = try WebhookPayload.decode(delivery.payload)
        if payload.data.status == .completed {
            payload.data.resultUrl = "\(baseURL)/api/v1/jobs/\(payload.data.jobId)/download"
        }
        return try payload.json()
    }

    /// Checks the endpoint's address and POSTs `body` to it, all within `deadline`; its HTTP
    /// status. The connection goes to the address that was checked (the URL's host stays the Host
    /// header and the TLS server name); it is closed once the head is in (the body is dropped
    /// unread: only the status counts). A head that came in counts even when closing the
    /// connection overruns the deadline.
    func post(_ body: String, delivery: WebhookDelivery, endpoint: WebhookEndpoint) async throws -> Int {
        let checker = targets
        let timestamp = Int(clock().timeIntervalSince1970)
        // Sealed in the store under the server secret (stored before sealing existed: as it is).
        guard let signingSecret = secret.open(endpoint.secret, purpose: Self.secretPurpose) else {
            throw SealedSecretError()
        }
        let signature = WebhookSignature.header(secret: signingSecret, timestamp: timestamp, body: Array(body.utf8))
        // The HTTP client's own deadline for the head, from the attempt's start (lookup included).
        let until = NIODeadline.now() + .init(deadline.headLimit)
        let head = AnswerHead()
        do {
            return try await deadline.run {
                let target = try await checker.check(endpoint.url, account: delivery.accountId)
                var request = HTTPClientRequest(url: target.url)
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                request.headers.add(name: "User-Agent", value: "Moments-Webhooks/1")
                request.headers.add(name: "Moments-Event", value: delivery.eventType.rawValue)
                request.headers.add(name: "Moments-Delivery", value: delivery.id)
                request.headers.add(name: "Moments-Signature", value: signature)
                request.body = .bytes(ByteBuffer(string: body))
                let client = Self.client(pinning: target)
                do {
                    let status = try await Self.status(of: request, on: client, deadline: until)
                    head.status.store(status, ordering: .relaxed)
                    try? await client.shutdown()
                    return status
                } catch {
                    try? await client.shutdown()
                    throw error
                }
            }
        } catch let exceeded as AttemptDeadline.Exceeded {
            let status = head.status.load(ordering: .relaxed)
            if status > 0 { return status }
            throw exceeded
        }
    }

    /// The status of the answer to `request`; its body is dropped unread (which ends the request
    /// and closes the connection).
    static func status(of request: HTTPClientRequest, on client: HTTPClient, deadline: NIODeadline) async throws -> Int
    {
        let response = try await client.execute(request, deadline: deadline, logger: nil)
        return Int(response.status.code)
    }

    /// A client for one attempt, connecting to the checked address: redirects are not followed,
    /// no decompression.
    static func client(pinning target: WebhookTarget) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(10))
        configuration.decompression = .disabled
        configuration.dnsOverride = target.dnsOverride
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// What the delivery log says about an error (no internals: the endpoint's owner reads it).
    func describe(_ error: any Error) -> String {
        let noAnswer = Say.webhookNoAnswer(within: deadline.spoken)
        if error is AttemptDeadline.Exceeded { return noAnswer }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout:
                return noAnswer
            case .remoteConnectionClosed:
                return Say.webhookClosed
            default:
                break
            }
        }
        let text = String(describing: error).lowercased()
        if text.contains("refused") { return Say.webhookRefusedConnection }
        if text.contains("timeout") || text.contains("timed out") { return noAnswer }
        if text.contains("certificate") || text.contains("tls") || text.contains("ssl") || text.contains("handshake") {
            return Say.webhookTLSFailed
        }
        return Say.webhookUnreachableEndpoint
    }
}

/// The status of an answer's head, once it is in (0 before).
final class AnswerHead: Sendable {
    let status = Atomic<Int>(0)
}

/// An endpoint's signing secret was sealed under another server secret (`security.serverSecret`
/// differs between this process and the one that registered it): nothing can be signed.
struct SealedSecretError: Error, CustomStringConvertible {
    var description: String {
        Say.webhookSecretSealedElsewhere
    }
}

import AsyncHTTPClient
import Foundation
import JobStore
import Logging
import MomentsConfig
import NIOCore
import Telemetry

/// Delivers the webhook outbox: claims due deliveries (leased, so dispatchers in several processes
/// share the work), checks the endpoint's address again (DNS may have changed since it was
/// registered), POSTs the signed event with a 10 s timeout and no redirects followed, and records
/// the attempt: 2xx delivered; anything else tried again after `webhooks.retryBackoffSeconds`·2^(n−1)
/// (at most an hour) until 24 h after the event, then given up. Runs in every process that runs
/// the job runner (`moments serve` and `moments worker`), woken by the store's `webhookQueued`
/// event and every `webhooks.pollSeconds`.
public final class WebhookDispatcher: Sendable {
    let database: any MomentsStore
    let settings: WebhookSettings
    /// The public origin, for the `result_url` of completed jobs.
    let baseURL: String
    let logger: Logger
    let clock: @Sendable () -> Date
    /// This dispatcher's lease owner name.
    let worker: String

    /// The longest an attempt may take, connection included.
    public static let timeout: TimeAmount = .seconds(10)
    /// A claimed delivery is this dispatcher's for this long (longer than an attempt can take).
    static let leaseSeconds = 60.0
    /// Deliveries attempted at once.
    static let batch = 16
    /// Largest part of an endpoint's answer read (the rest is ignored).
    static let maxResponseBytes = 64 * 1024

    /// Redirects are not followed (a 3xx is a failed attempt); no decompression; the timeout is set
    /// per request.
    static let httpClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(10))
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(database: any MomentsStore, settings: WebhookSettings, baseURL: String, worker: String, logger: Logger,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.database = database; self.settings = settings; self.baseURL = baseURL; self.worker = worker
        self.logger = logger; self.clock = clock
    }

    /// Delivers until the task is cancelled.
    public func run() async {
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
                for await _ in bell {
                    if Task.isCancelled { break }
                    await self.deliverDue()
                }
            }
            // Every child runs until the task is cancelled (the store's event stream may end
            // first, when the store closes: polling goes on).
        }
    }

    /// Attempts every delivery due now, a batch at a time. Returns how many were attempted.
    @discardableResult
    public func deliverDue() async -> Int {
        var attempted = 0
        while !Task.isCancelled {
            let claimed: [ClaimedWebhook]
            do {
                claimed = try await database.claimDueWebhooks(worker: worker, leaseSeconds: Self.leaseSeconds, limit: Self.batch, now: clock())
            } catch is CancellationError {
                break
            } catch {
                logger.error("cannot read the webhook outbox", metadata: ["error": "\(error)"])
                break
            }
            if claimed.isEmpty { break }
            await withTaskGroup(of: Void.self) { group in
                for item in claimed { group.addTask { await self.attempt(item) } }
            }
            attempted += claimed.count
            if claimed.count < Self.batch { break }
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
                if let code = statusCode, (300..<400).contains(code) { failure = "redirects are not followed (answered \(code))" }
            } catch let refusal as WebhookTargetRefusal {
                failure = refusal.detail
            } catch {
                failure = Self.describe(error)
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
        } else if let next = WebhookSchedule.nextAttempt(after: delivery.attempts + 1, base: settings.retryBackoffSeconds,
                                                         createdAt: delivery.createdAt, now: clock()) {
            outcome = .retry(at: next)
        } else {
            outcome = .gaveUp
        }
        let attempt = WebhookAttempt(deliveryId: delivery.id, number: delivery.attempts + 1, at: started, statusCode: statusCode,
                                     error: failure, durationMs: durationMs)
        do {
            let held = try await database.recordWebhookAttempt(attempt, worker: worker, outcome: outcome, now: clock())
            if held {
                switch outcome {
                case .delivered: WebhookMetrics.attempted(.delivered)
                case .retry: WebhookMetrics.attempted(.retried)
                case .gaveUp: WebhookMetrics.attempted(.gaveUp)
                }
            } else { logger.notice("webhook delivery no longer held by this dispatcher", metadata: ["delivery": "\(delivery.id)"]) }
            if outcome == .gaveUp {
                logger.warning("webhook delivery given up", metadata: ["delivery": "\(delivery.id)", "job": "\(delivery.jobId)",
                                                                       "attempts": "\(attempt.number)"])
            }
        } catch is CancellationError {
            // Shutdown: the lease runs out and the delivery is attempted again.
        } catch {
            // The lease runs out and the delivery is attempted again: at least once.
            logger.error("cannot record a webhook attempt", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
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

    /// POSTs `body` to the endpoint; its HTTP status.
    func post(_ body: String, delivery: WebhookDelivery, endpoint: WebhookEndpoint) async throws -> Int {
        let target = try await WebhookTargets.check(endpoint.url, allowPrivate: settings.allowPrivateTargets)
        let timestamp = Int(clock().timeIntervalSince1970)
        var request = HTTPClientRequest(url: target.requestURL)
        request.method = .POST
        if let host = target.hostHeader { request.headers.replaceOrAdd(name: "Host", value: host) }
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Moments-Webhooks/1")
        request.headers.add(name: "Moments-Event", value: delivery.eventType.rawValue)
        request.headers.add(name: "Moments-Delivery", value: delivery.id)
        request.headers.add(name: "Moments-Signature", value: WebhookSignature.header(secret: endpoint.secret, timestamp: timestamp,
                                                                                       body: Array(body.utf8)))
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await Self.httpClient.execute(request, timeout: Self.timeout, logger: nil)
        // The answer's body is not used; reading some of it lets the connection be reused.
        _ = try? await response.body.collect(upTo: Self.maxResponseBytes)
        return Int(response.status.code)
    }

    /// What the delivery log says about an error (no internals: the endpoint's owner reads it).
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout:
                return "no answer within 10 seconds"
            case .remoteConnectionClosed:
                return "the endpoint closed the connection without answering"
            default:
                break
            }
        }
        let text = String(describing: error).lowercased()
        if text.contains("refused") { return "the connection was refused" }
        if text.contains("timeout") || text.contains("timed out") { return "no answer within 10 seconds" }
        if text.contains("certificate") || text.contains("tls") || text.contains("ssl") || text.contains("handshake") {
            return "the TLS handshake failed (is the endpoint's certificate valid for its host name?)"
        }
        return "could not connect to the endpoint"
    }
}

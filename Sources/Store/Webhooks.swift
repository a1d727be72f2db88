import Crypto
import Foundation

// Signed webhooks: an account's endpoint (URL and signing secret), and a durable outbox of
// deliveries written in the same transaction as the job's final state change, so a job that
// completes, fails or is cancelled is announced at least once, across restarts.

/// The event types a webhook announces.
public enum WebhookEventType: String, Sendable, CaseIterable, Codable {
    case jobCompleted = "job.completed"
    case jobFailed = "job.failed"
    case jobCancelled = "job.cancelled"

    /// The event of a job that reached `state`; nil for states that are not final.
    public init?(_ state: JobState) {
        switch state {
        case .completed: self = .jobCompleted
        case .failed: self = .jobFailed
        case .cancelled: self = .jobCancelled
        case .pending, .processing: return nil
        }
    }
}

/// An account's webhook endpoint. The secret signs every delivery; it is shown to the account
/// only when it is made (registration and rotation).
public struct WebhookEndpoint: Sendable, Equatable {
    public var accountId: String
    public var url: String
    public var secret: String
    public var createdAt: Date
    /// When the secret was last replaced (a PUT on an existing endpoint); nil: never.
    public var rotatedAt: Date?

    public init(accountId: String, url: String, secret: String, createdAt: Date, rotatedAt: Date?) {
        self.accountId = accountId; self.url = url; self.secret = secret; self.createdAt = createdAt;
        self.rotatedAt = rotatedAt
    }

    /// A new signing secret: "whsec_" and 32 random bytes in base64url (256 bits).
    public static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let encoded = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return "whsec_" + encoded
    }
}

public enum WebhookDeliveryStatus: String, Sendable, Codable {
    /// Waiting for its next attempt (the first one included).
    case pending
    /// A 2xx answer was had.
    case delivered
    /// Given up: no 2xx within the retry window (24 h), or the endpoint was removed.
    case failed
}

/// One event to deliver to an account's endpoint: a row of the outbox.
public struct WebhookDelivery: Sendable, Equatable {
    public var id: String
    public var accountId: String
    public var jobId: String
    public var eventType: WebhookEventType
    /// The event's JSON (`WebhookPayload`), as written with the job's state change.
    public var payload: String
    public var status: WebhookDeliveryStatus
    public var attempts: Int
    /// When the next attempt is due (nil once delivered or given up).
    public var nextAttemptAt: Date?
    public var createdAt: Date
    public var deliveredAt: Date?
    public var lastStatusCode: Int?
    public var lastError: String?
    /// The dispatcher holding the delivery while it attempts it, and until when.
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?

    public init(
        id: String, accountId: String, jobId: String, eventType: WebhookEventType, payload: String,
        status: WebhookDeliveryStatus, attempts: Int, nextAttemptAt: Date?, createdAt: Date, deliveredAt: Date?,
        lastStatusCode: Int?, lastError: String?, leaseOwner: String?, leaseExpiresAt: Date?
    ) {
        self.id = id; self.accountId = accountId; self.jobId = jobId; self.eventType = eventType; self.payload = payload
        self.status = status; self.attempts = attempts; self.nextAttemptAt = nextAttemptAt; self.createdAt = createdAt
        self.deliveredAt = deliveredAt; self.lastStatusCode = lastStatusCode; self.lastError = lastError
        self.leaseOwner = leaseOwner; self.leaseExpiresAt = leaseExpiresAt
    }
}

/// One attempt at a delivery, as the per-job log shows it.
public struct WebhookAttempt: Sendable, Equatable {
    public var deliveryId: String
    /// 1 for the first attempt.
    public var number: Int
    public var at: Date
    /// The endpoint's HTTP status, or nil when no answer was had (then `error` says why).
    public var statusCode: Int?
    public var error: String?
    public var durationMs: Int

    public init(deliveryId: String, number: Int, at: Date, statusCode: Int?, error: String?, durationMs: Int) {
        self.deliveryId = deliveryId; self.number = number; self.at = at; self.statusCode = statusCode;
        self.error = error
        self.durationMs = durationMs
    }
}

/// A delivery claimed by a dispatcher, with the endpoint it goes to now (nil: removed since).
public struct ClaimedWebhook: Sendable, Equatable {
    public var delivery: WebhookDelivery
    public var endpoint: WebhookEndpoint?
    /// The account's endpoint is failing: one of its pending deliveries was attempted already
    /// (and not delivered). Such attempts share a smaller part of a dispatcher's slots.
    public var failing: Bool

    public init(delivery: WebhookDelivery, endpoint: WebhookEndpoint?, failing: Bool = false) {
        self.delivery = delivery; self.endpoint = endpoint; self.failing = failing
    }
}

/// What an attempt leads to.
public enum WebhookOutcome: Sendable, Equatable {
    case delivered
    case retry(at: Date)
    case gaveUp
}

/// The body of a webhook: `{"id", "type", "created_at", "data": {the job's /status fields}}`.
/// Stored in the outbox without `result_url` (the store does not know the public origin); the
/// dispatcher fills it in before signing, the same on every attempt.
public struct WebhookPayload: Codable, Sendable, Equatable {
    public struct JobData: Codable, Sendable, Equatable {
        public var jobId: String
        public var status: JobState
        public var progress: Int
        public var message: String
        public var resultUrl: String?
        /// The stable code of a failed job; null otherwise.
        public var errorCode: String?

        enum CodingKeys: String, CodingKey {
            case jobId = "job_id", status, progress, message, resultUrl = "result_url", errorCode = "error_code"
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(jobId, forKey: .jobId)
            try c.encode(status, forKey: .status)
            try c.encode(progress, forKey: .progress)
            try c.encode(message, forKey: .message)
            try c.encode(resultUrl, forKey: .resultUrl)
            try c.encode(errorCode, forKey: .errorCode)
        }
    }

    public var id: String
    public var type: WebhookEventType
    /// ISO 8601, UTC, whole seconds.
    public var createdAt: String
    public var data: JobData

    enum CodingKeys: String, CodingKey { case id, type, createdAt = "created_at", data }

    public init(deliveryId: String, job: Job, type: WebhookEventType, now: Date) {
        id = deliveryId
        self.type = type
        createdAt = Self.timestamp(now)
        data = JobData(
            jobId: job.id, status: job.status, progress: job.progress, message: job.message, resultUrl: nil,
            errorCode: job.status == .failed ? job.errorCode : nil)
    }

    public static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Compact JSON with sorted keys.
    public func json() throws -> String { String(decoding: try Self.encoder.encode(self), as: UTF8.self) }

    public static func decode(_ text: String) throws -> WebhookPayload {
        try JSONDecoder().decode(WebhookPayload.self, from: Data(text.utf8))
    }
}

/// The `Moments-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`
/// (the scheme of Stripe and Mux). The key is the secret string as shown, "whsec_" included.
public enum WebhookSignature {
    public static func header(secret: String, timestamp: Int, body: some DataProtocol) -> String {
        "t=\(timestamp),v1=\(hex(secret: secret, timestamp: timestamp, body: body))"
    }

    public static func hex(secret: String, timestamp: Int, body: some DataProtocol) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(contentsOf: body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Checks a header against `body` as a receiver does: the v1 value must match (compared in
    /// constant time) and `t` be at most `tolerance` seconds from `now`.
    public static func verify(
        header: String, secret: String, body: some DataProtocol, now: Date, tolerance: TimeInterval = 300
    ) -> Bool {
        var timestamp: Int?
        var candidates: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int(pair[1]) }
            if pair[0] == "v1" { candidates.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = Array(hex(secret: secret, timestamp: timestamp, body: body).utf8)
        return candidates.contains { candidate in
            let given = Array(candidate.utf8)
            guard given.count == expected.count else { return false }
            return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}

/// When a delivery is tried again: base·2^(attempts−1) after its `attempts`-th attempt, at most an
/// hour; nil once that would fall after `maxAge` from its creation (given up).
public enum WebhookSchedule {
    public static let maxAge: TimeInterval = 24 * 3600

    public static func nextAttempt(
        after attempts: Int, base: Double, createdAt: Date, now: Date, maxAge: TimeInterval = maxAge
    ) -> Date? {
        let next = now.addingTimeInterval(retryBackoff(base: base, attempts: attempts))
        return next.timeIntervalSince(createdAt) > maxAge ? nil : next
    }
}

/// The account's endpoint and the outbox.
public protocol WebhookRepository: Sendable {
    func webhookEndpoint(accountId: String) async throws -> WebhookEndpoint?
    /// Registers the account's endpoint, or replaces its URL; either way with `secret` (a rotation).
    func setWebhookEndpoint(accountId: String, url: String, secret: String, now: Date) async throws -> WebhookEndpoint
    /// Removes the endpoint; deliveries still pending are given up when next due. False: none.
    func deleteWebhookEndpoint(accountId: String) async throws -> Bool
    /// Takes up to `limit` pending deliveries that are due at `now` and not leased, leasing them to
    /// `worker` until `now + leaseSeconds` (several dispatchers on several hosts skip each other's):
    /// at most one per account, and none of an account that has a delivery leased now (whoever
    /// holds it), so a slow endpoint holds up only its own account's deliveries. The oldest due
    /// delivery of each account; accounts in the order of those. Of those, at most `failingLimit`
    /// of accounts whose endpoint is failing (a pending delivery of theirs was attempted already;
    /// `ClaimedWebhook.failing`): the others are taken first whatever their order, so endpoints
    /// that time out, however many accounts have one, cannot fill a dispatcher's slots.
    func claimDueWebhooks(worker: String, leaseSeconds: Double, limit: Int, failingLimit: Int, now: Date) async throws
        -> [ClaimedWebhook]
    /// Logs an attempt and applies its outcome to a delivery `worker` holds. False: not held any
    /// more (its lease ran out and another dispatcher took it).
    @discardableResult
    func recordWebhookAttempt(_ attempt: WebhookAttempt, worker: String, outcome: WebhookOutcome, now: Date)
        async throws -> Bool
    /// Every delivery of the job (of `accountId`), oldest first, each with its attempts in order.
    func webhookDeliveries(jobId: String, accountId: String) async throws -> [(
        delivery: WebhookDelivery, attempts: [WebhookAttempt]
    )]
}

extension WebhookRepository {
    /// Due deliveries with no limit of their own on failing endpoints (tools and tests).
    public func claimDueWebhooks(worker: String, leaseSeconds: Double, limit: Int, now: Date) async throws
        -> [ClaimedWebhook]
    {
        try await claimDueWebhooks(
            worker: worker, leaseSeconds: leaseSeconds, limit: limit, failingLimit: limit, now: now)
    }
}

// MARK: SQLite

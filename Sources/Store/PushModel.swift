import Foundation

// Push notifications to the account's phones (Apple Push Notification service): the devices an
// account registered, and a durable outbox of pushes written in the same transaction as a job's
// end (completed or failed), as webhooks are.

/// Which APNs endpoint a device token belongs to: builds from Xcode and TestFlight-less debug
/// builds register with the sandbox, App Store and TestFlight builds with production.
public enum PushEnvironment: String, Sendable, Codable, CaseIterable {
    case production
    case sandbox
}

/// A phone that asked for pushes: its APNs device token (64 lowercase hex characters) and environment.
public struct PushDevice: Sendable, Equatable {
    public var token: String
    public var accountId: String
    public var environment: PushEnvironment
    public var createdAt: Date
    public var updatedAt: Date

    public init(token: String, accountId: String, environment: PushEnvironment, createdAt: Date, updatedAt: Date) {
        self.token = token; self.accountId = accountId; self.environment = environment; self.createdAt = createdAt;
        self.updatedAt = updatedAt
    }

    /// The token in canonical form (lowercase), or nil unless it is exactly 64 hexadecimal characters.
    public static func canonicalToken(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.count == 64,
            bytes.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0) })
        else { return nil }
        return text.lowercased()
    }
}

/// What registering a device did.
public enum DeviceRegistration: Sendable, Equatable {
    /// New to this account (possibly moved from another account: a phone signed in again).
    case created(PushDevice)
    /// Already this account's: its environment updated.
    case updated(PushDevice)
    /// The account has `limit` devices already.
    case limitReached(limit: Int)
}

public enum PushDeliveryStatus: String, Sendable, Codable {
    /// Waiting for its next attempt (the first one included).
    case pending
    /// APNs accepted it (200).
    case sent
    /// Given up: refused for good, the device was removed, or no acceptance within the retry window.
    case failed
}

/// One push to one device: a row of the outbox.
public struct PushDelivery: Sendable, Equatable {
    public var id: String
    public var accountId: String
    public var jobId: String
    public var token: String
    public var environment: PushEnvironment
    /// The APNs JSON body (`PushPayload`), as written with the job's end.
    public var payload: String
    public var status: PushDeliveryStatus
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var createdAt: Date
    public var sentAt: Date?
    public var lastStatusCode: Int?
    /// APNs' reason (e.g. "Unregistered") or why no answer was had.
    public var lastReason: String?
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?

    public init(
        id: String, accountId: String, jobId: String, token: String, environment: PushEnvironment, payload: String,
        status: PushDeliveryStatus, attempts: Int, nextAttemptAt: Date?, createdAt: Date, sentAt: Date?,
        lastStatusCode: Int?, lastReason: String?, leaseOwner: String?, leaseExpiresAt: Date?
    ) {
        self.id = id; self.accountId = accountId; self.jobId = jobId; self.token = token; self.environment = environment
        self.payload = payload; self.status = status; self.attempts = attempts; self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt; self.sentAt = sentAt; self.lastStatusCode = lastStatusCode;
        self.lastReason = lastReason
        self.leaseOwner = leaseOwner; self.leaseExpiresAt = leaseExpiresAt
    }

    public static func newID() -> String { "psh_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") }
}

/// What an attempt at a push leads to.
public enum PushOutcome: Sendable, Equatable {
    case sent
    case retry(at: Date)
    /// Refused for good (or out of time); the delivery is over.
    case gaveUp
    /// APNs says the token is no longer valid (410 Unregistered, 400 BadDeviceToken): the delivery
    /// is over and the device is removed from its account (with its other pending pushes).
    case deviceGone
}

/// When a push is tried again: base·2^(attempts−1) after its `attempts`-th attempt (at most an
/// hour); nil once that would fall after `maxAge` from its creation (stale news is not sent).
public enum PushSchedule {
    public static let maxAge: TimeInterval = 3600

    public static func nextAttempt(
        after attempts: Int, base: Double, createdAt: Date, now: Date, maxAge: TimeInterval = maxAge
    ) -> Date? {
        let next = now.addingTimeInterval(retryBackoff(base: base, attempts: attempts))
        return next.timeIntervalSince(createdAt) > maxAge ? nil : next
    }
}

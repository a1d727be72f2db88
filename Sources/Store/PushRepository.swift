import Foundation

/// An account's phones and the push outbox (both engines).
public protocol PushRepository: Sendable {
    /// Registers `token` (canonical: 64 lowercase hex) for the account with its environment. A
    /// token another account held moves to this one (the phone signed in again), taking none of the
    /// other account's pending pushes. Refused when the account already has `limit` other devices.
    func registerDevice(accountId: String, token: String, environment: PushEnvironment, limit: Int, now: Date)
        async throws -> DeviceRegistration
    /// The account's devices, oldest first.
    func devices(accountId: String) async throws -> [PushDevice]
    /// Removes one of the account's devices, giving up its pending pushes. False: not the account's.
    func deleteDevice(accountId: String, token: String, now: Date) async throws -> Bool
    /// Takes up to `limit` pending pushes that are due at `now` and not leased, leasing them to
    /// `worker` until `now + leaseSeconds` (dispatchers in several processes skip each other's).
    func claimDuePushes(worker: String, leaseSeconds: Double, limit: Int, now: Date) async throws -> [PushDelivery]
    /// Applies an attempt's outcome to a push `worker` holds (`.deviceGone` also removes the device
    /// and gives up its other pending pushes). False: not held any more (its lease ran out).
    @discardableResult
    func recordPushAttempt(
        id: String, worker: String, outcome: PushOutcome, statusCode: Int?, reason: String?, now: Date
    ) async throws -> Bool
    /// Every push of the job, oldest first (tests and operators).
    func pushDeliveries(jobId: String) async throws -> [PushDelivery]
}

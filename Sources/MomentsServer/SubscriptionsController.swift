import Accounts
import AppStore
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Store
import Wording

/// StoreKit 2 transactions from the app, and App Store Server Notifications V2 from Apple. Both
/// are verified offline against the configured Apple roots; anything that does not verify is
/// refused (fail closed).
struct SubscriptionsController {
    let appStore: AppStoreGate
    let policy: PlanPolicy
    let subscriptions: any SubscriptionRepository

    func addRoutes(to router: Router<AppRequestContext>, protected: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.post, "/api/v1/subscriptions/apple", on: protected, use: presentTransaction)
        table.add(.post, "/api/v1/webhooks/app-store", on: router, use: notification)
    }

    private func verifier(_ context: AppRequestContext) throws -> AppStoreVerifier {
        guard let verifier = appStore.verifier else {
            // The reason names files on the server: the log has it.
            context.logger.error(
                "App Store verification is not configured",
                metadata: ["reason": "\(appStore.unavailable ?? "no Apple root certificate")"])
            throw Problem(
                .serviceUnavailable, code: "app_store_unavailable",
                detail:
                    Say.appStoreUnavailable
            )
        }
        return verifier
    }

    /// The one string field of a small JSON body.
    private func field(_ name: String, of request: Request, context: AppRequestContext) async throws -> String {
        context.inviteBody()
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else {
            throw Problem.badRequest("invalid_json", Say.jwsBodyNotAnObject(field: name))
        }
        guard let value = object[name] as? String, !value.isEmpty else {
            throw Problem.badRequest(
                "missing_field", Say.missingStringField(name), extensions: ["field": .string(name)])
        }
        return value
    }

    static func problem(_ error: AppStoreVerificationError, what: String) -> Problem {
        Problem(
            .unprocessableContent, code: "invalid_signed_\(what)",
            detail:
                Say.signedPayloadRefused(what, because: error.detail),
            extensions: ["reason": .string(error.kind.rawValue)])
    }

    static func facts(_ tx: AppStoreTransaction) -> TransactionFacts {
        TransactionFacts(
            originalTransactionId: tx.originalTransactionId, productId: tx.productId, expiresAt: tx.expiresDate,
            revoked: tx.revocationDate != nil, appAccountToken: tx.appAccountToken?.lowercased(),
            environment: tx.environment, signedDate: tx.signedDate)
    }

    /// POST /api/v1/subscriptions/apple {signed_transaction}: the app's `Transaction.jwsRepresentation`.
    @Sendable func presentTransaction(_ request: Request, context: AppRequestContext) async throws -> AccountView {
        let account = try context.requireAccount()
        let jws = try await field("signed_transaction", of: request, context: context)
        let verifier = try verifier(context)
        let tx: AppStoreTransaction
        do { tx = try await verifier.verifyTransaction(jws) } catch { throw Self.problem(error, what: "transaction") }
        guard tx.productId == policy.plans.proProductId else {
            throw Problem(
                .unprocessableContent, code: "unknown_product",
                detail:
                    Say.unknownProduct(tx.productId, known: policy.plans.proProductId)
            )
        }
        if let token = tx.appAccountToken, token.lowercased() != account.id {
            throw Problem(
                .forbidden, code: "transaction_for_another_account",
                detail:
                    Say.purchaseForAnotherAccount
            )
        }
        // A test purchase (TestFlight, App Review, Xcode) is free: it unlocks pro only for testers.
        // Refused here, nothing is recorded (the app can present it again once the account is a
        // tester); one that arrives by notification is recorded but grants nothing (see entitlement).
        if Subscription.testEnvironments.contains(tx.environment), !account.tester, !subscriptions.sandboxForAll {
            throw Problem(
                .forbidden, code: "sandbox_purchase_not_allowed",
                detail:
                    Say.sandboxPurchase(environment: tx.environment),
                extensions: ["environment": .string(tx.environment)])
        }
        switch try await subscriptions.applyTransaction(Self.facts(tx), accountId: account.id, now: policy.clock())
        {
        case .failure:
            throw Problem(
                .forbidden, code: "transaction_for_another_account",
                detail:
                    Say.subscriptionOfAnotherAccount
            )
        case .success:
            return AccountView(account, try await policy.accountPlan(account), proProduct: policy.plans.proProductId)
        }
    }

    struct NotificationResult: ResponseEncodable {
        var status: String
        var notificationUuid: String
        enum CodingKeys: String, CodingKey { case status, notificationUuid = "notification_uuid" }
    }

    /// POST /api/v1/webhooks/app-store {signedPayload}: 200 for every verified payload (so Apple
    /// stops retrying), whether it changed something, was a duplicate, or arrived out of order.
    @Sendable func notification(_ request: Request, context: AppRequestContext) async throws -> NotificationResult {
        let jws = try await field("signedPayload", of: request, context: context)
        let verifier = try verifier(context)
        let verified: AppStoreVerifier.VerifiedNotification
        do { verified = try await verifier.verifyNotification(jws) } catch {
            throw Self.problem(error, what: "notification")
        }
        let (payload, tx, renewal) = (verified.payload, verified.transaction, verified.renewal)
        if let reason = verified.notForThisServer {
            context.logger.notice(
                "App Store notification for another app or environment", metadata: ["reason": "\(reason)"])
            return NotificationResult(status: "ignored", notificationUuid: payload.notificationUUID)
        }
        let effect: NotificationEffect
        switch (payload.notificationType, payload.subtype) {
        case ("SUBSCRIBED", _), ("DID_RENEW", _), ("RENEWAL_EXTENDED", _): effect = .extend
        case ("REFUND_REVERSED", _): effect = .reinstate
        case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"): effect = .grace(until: renewal?.gracePeriodExpiresDate)
        case ("EXPIRED", _), ("GRACE_PERIOD_EXPIRED", _): effect = .expire
        case ("REFUND", _), ("REVOKE", _): effect = .revoke
        default: effect = .none
        }
        let relevant = tx.map { $0.productId == policy.plans.proProductId } ?? false
        let applied = try await subscriptions.applyNotification(
            uuid: payload.notificationUUID, type: payload.notificationType, subtype: payload.subtype,
            signedDate: payload.signedDate,
            tx: tx.map(Self.facts), effect: relevant ? effect : .none, now: policy.clock())
        context.logger.info(
            "App Store notification",
            metadata: [
                "type": "\(payload.notificationType)", "subtype": "\(payload.subtype ?? "")",
                "uuid": "\(payload.notificationUUID)", "applied": "\(applied)"
            ])
        return NotificationResult(status: applied ? "applied" : "recorded", notificationUuid: payload.notificationUUID)
    }
}

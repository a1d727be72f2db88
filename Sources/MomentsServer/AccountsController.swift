import Accounts
import Foundation
import HTTPTypes
import Hummingbird
import Store

/// POST /api/v1/accounts: a new account and its API key (shown this once).
struct AccountsController {
    let accounts: AccountService
    let store: any MomentsStore
    let clock: @Sendable () -> Date
    let limiter: CreationLimiter
    let addresses: ClientAddressResolver

    func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.post, "/api/v1/accounts", on: router, use: create)
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<
        AccountCreatedResponse
    > {
        let client = addresses.client(peer: context.peerAddress, forwardedFor: request.headers[values: .xForwardedFor])
        if let retry = try await limiter.admit(
            client?.limiterKey ?? "unknown", store: store, now: clock())
        {
            throw Problem(
                .tooManyRequests, code: "too_many_accounts",
                detail:
                    "Too many accounts were created from your address in the last hour. Keep using the API key you have, or try again later.",
                headers: [.retryAfter: String(retry)])
        }
        context.inviteBody()
        var label: String?
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        if body.readableBytes > 0 {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            else {
                throw Problem.badRequest(
                    "invalid_json", "The body must be a JSON object such as {\"label\": \"my phone\"}, or empty.")
            }
            if let unknown = object.keys.first(where: { $0 != "label" }) {
                throw Problem.badRequest(
                    "unknown_field", "Unknown field \"\(unknown)\". Accounts accept only \"label\".")
            }
            if let value = object["label"] {
                guard let text = value as? String, text.count <= 100 else {
                    throw Problem.badRequest("invalid_field", "\"label\" must be a string of at most 100 characters.")
                }
                label = text
            }
        }
        let (account, key) = try await accounts.createAccount(label: label)
        return EditedResponse(
            status: .created,
            response: AccountCreatedResponse(
                accountId: account.id, apiKey: key, plan: account.plan,
                message: "Keep this API key: it is shown only now. Send it as \"Authorization: Bearer <api_key>\"."))
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

/// At most `perHour` accounts per client (an IPv4 address or an IPv6 /64, see
/// `IPAddress.limiterKey`) in a sliding hour: the free quota is per account,
/// so unlimited sign-ups would let one client multiply it. (A per-device proof, such as StoreKit's
/// AppTransaction or App Attest, would bind it more tightly.) Counted in the store, so the limit
/// holds however many API processes share it; the store keeps a digest of the client, not its address.
final class CreationLimiter: Sendable {
    let perHour: Int

    init(perHour: Int) { self.perHour = perHour }

    /// Nil when admitted (and counted); otherwise seconds until the next one is allowed.
    func admit(_ address: String, store: any MomentsStore, now: Date) async throws -> Int? {
        guard perHour > 0 else { return nil }
        switch try await store.admitSignup(
            client: Account.hash(apiKey: "signup " + address), perWindow: perHour, windowSeconds: 3600, now: now)
        {
        case .admitted: return nil
        case .refused(let retry): return retry
        }
    }
}

import Accounts
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Store
import Wording

/// POST /api/v1/accounts: a new account and its API key (shown this once).
struct AccountsController {
    let accounts: AccountService
    /// The sign-up allowance is counted in the accounts' repository.
    let store: any AccountRepository
    let clock: @Sendable () -> Date
    let limiter: CreationLimiter
    let addresses: ClientAddressResolver

    func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.post, "/api/v1/accounts", on: router, use: create)
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<
        AccountCreatedResponse
    > {
        try Self.requireJSONBody(request)
        let client = addresses.client(peer: context.peerAddress, forwardedFor: request.headers[values: .xForwardedFor])
        if let retry = try await limiter.admit(
            client?.limiterKey ?? "unknown", store: store, now: clock())
        {
            throw Problem(
                .tooManyRequests, code: "too_many_accounts",
                detail:
                    Say.tooManyAccounts,
                headers: [.retryAfter: String(retry)])
        }
        context.inviteBody()
        var label: String?
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        if body.readableBytes > 0 {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            else {
                throw Problem.badRequest(
                    "invalid_json", Say.labelBodyNotAnObject(example: "my phone"))
            }
            if let unknown = object.keys.first(where: { $0 != "label" }) {
                throw Problem.badRequest(
                    "unknown_field", Say.unknownField(unknown, accepted: Say.accountFields))
            }
            if let value = object["label"] {
                guard let text = value as? String, text.count <= 100 else {
                    throw Problem.badRequest("invalid_field", Say.invalidLabel)
                }
                label = text
            }
        }
        let (account, key) = try await accounts.createAccount(label: label)
        return EditedResponse(
            status: .created,
            response: AccountCreatedResponse(
                accountId: account.id, apiKey: key, plan: account.plan,
                message: Say.keyShownOnce))
    }
}

extension AccountsController {
    /// The body is JSON or nothing: a body declared as anything else (a form, `text/plain`: the
    /// types a page of another site can make a browser send without asking) is refused with 415
    /// before the sign-up allowance is touched. An empty body may carry any type (some HTTP
    /// libraries add `application/x-www-form-urlencoded` to every POST); one without a type is
    /// read as JSON, as before. `CrossSiteGuard` refuses browsers' cross-site requests whatever
    /// their type; this also covers browsers that send no Origin.
    static func requireJSONBody(_ request: Request) throws {
        let hasBody = request.headers[.contentLength].map { $0 != "0" } ?? (request.headers[.transferEncoding] != nil)
        guard hasBody, let type = request.headers[.contentType], !isJSON(type) else { return }
        throw Problem(
            .unsupportedMediaType, code: "unsupported_media_type",
            detail:
                Say.accountBodyNotJSON
        )
    }

    /// application/json, with parameters or not (`; charset=utf-8`).
    static func isJSON(_ contentType: String) -> Bool {
        contentType.split(separator: ";", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces).lowercased()
            == "application/json"
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
    func admit(_ address: String, store: any AccountRepository, now: Date) async throws -> Int? {
        guard perHour > 0 else { return nil }
        switch try await store.admitSignup(
            client: Account.hash(apiKey: "signup " + address), perWindow: perHour, windowSeconds: 3600, now: now)
        {
        case .admitted: return nil
        case .refused(let retry): return retry
        }
    }
}

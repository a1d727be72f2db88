import Accounts
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Store

/// Requires `Authorization: Bearer <api_key>` and puts the account (and the key's id) in the
/// context. The key is checked against the database on every request: a revoked key gets 401 and
/// a disabled account 403 at once.
struct APIKeyMiddleware: RouterMiddleware {
    let accounts: AccountService
    /// A route anyone may ask, which answers a caller who sends a key in that account's terms: no
    /// header passes without an account; a header is checked as on every other route.
    var optional = false

    func handle(
        _ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            if optional { return try await next(request, context) }
            throw Self.unauthorized(
                "missing_api_key",
                "This endpoint needs an API key: send \"Authorization: Bearer <api_key>\". Create an account with POST /api/v1/accounts to get one."
            )
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw Self.unauthorized("invalid_authorization", "The Authorization header must be \"Bearer <api_key>\".")
        }
        let key = parts[1].trimmingCharacters(in: .whitespaces)
        switch try await accounts.authenticate(apiKey: key) {
        case .unknown:
            throw Self.unauthorized(
                "invalid_api_key",
                "The API key is not valid. Check it, or create an account with POST /api/v1/accounts.")
        case .revoked:
            throw Self.unauthorized(
                "revoked_api_key",
                "This API key was revoked. Use another key of your account, or create one with POST /api/v1/account/keys using a key that still works."
            )
        case .disabled:
            throw Problem(
                .forbidden, code: "account_disabled", title: "Account disabled",
                detail: "This account is disabled; contact support.")
        case .valid(let account, let keyId):
            var context = context
            context.account = account
            context.apiKeyId = keyId
            return try await next(request, context)
        }
    }

    /// The key of `Authorization: Bearer <api_key>` (nil when the header is missing or malformed).
    static func bearerKey(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    /// How often a long request (an event stream, an append) checks that its key still works: a
    /// revoked key or a disabled account ends it within about this long.
    static let recheckInterval = Duration.seconds(2)

    /// Runs `onRevoked` once when the request's key stops working (revoked, account disabled),
    /// checking every `recheckInterval` until the returned task is cancelled. A store error is
    /// not a revocation (the next check decides).
    static func watchKey(of request: Request, accounts: AccountService, onRevoked: @escaping @Sendable () -> Void) -> Task<
        Void, Never
    > {
        let key = bearerKey(request)
        return Task {
            guard let key else { return }
            while !Task.isCancelled {
                do { try await Task.sleep(for: recheckInterval) } catch { return }
                guard let lookup = try? await accounts.authenticate(apiKey: key) else { continue }
                if case .valid = lookup { continue }
                onRevoked()
                return
            }
        }
    }

    static func unauthorized(_ code: String, _ detail: String) -> Problem {
        Problem(.unauthorized, code: code, detail: detail, headers: [.wwwAuthenticate: "Bearer realm=\"moments\""])
    }
}

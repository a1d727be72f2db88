import Accounts
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Store
import Wording

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
                Say.missingAPIKey
            )
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw Self.unauthorized("invalid_authorization", Say.invalidAuthorization)
        }
        let key = parts[1].trimmingCharacters(in: .whitespaces)
        switch try await accounts.authenticate(apiKey: key) {
        case .unknown:
            throw Self.unauthorized(
                "invalid_api_key",
                Say.invalidAPIKey)
        case .revoked:
            throw Self.unauthorized(
                "revoked_api_key",
                Say.revokedAPIKey
            )
        case .disabled:
            throw Problem(
                .forbidden, code: "account_disabled", title: Say.Title.accountDisabled,
                detail: Say.accountDisabled)
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

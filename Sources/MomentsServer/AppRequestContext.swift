import Foundation
import Hummingbird
import JobStore

/// The request context: Hummingbird's core storage plus the authenticated account.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by APIKeyMiddleware on the routes that need a key.
    public var account: Account?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        account = nil
    }

    /// JSON bodies (POST /api/v1/accounts) are small.
    public var maxUploadSize: Int { 64 * 1024 }

    public var responseEncoder: JSONEncoder { Self.encoder }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The authenticated account (the middleware guarantees one on protected routes).
    func requireAccount() throws -> Account {
        guard let account else {
            throw Problem(.unauthorized, code: "missing_api_key", detail: "This endpoint needs an API key.")
        }
        return account
    }
}

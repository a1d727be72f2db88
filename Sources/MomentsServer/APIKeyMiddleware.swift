import HTTPTypes
import Hummingbird
import Jobs

/// Requires `Authorization: Bearer <api_key>` and puts the account in the context.
struct APIKeyMiddleware: RouterMiddleware {
    let service: JobService

    func handle(_ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw Self.unauthorized("missing_api_key",
                "This endpoint needs an API key: send \"Authorization: Bearer <api_key>\". Create an account with POST /api/v1/accounts to get one.")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw Self.unauthorized("invalid_authorization", "The Authorization header must be \"Bearer <api_key>\".")
        }
        let key = parts[1].trimmingCharacters(in: .whitespaces)
        guard let account = try await service.account(apiKey: key) else {
            throw Self.unauthorized("invalid_api_key", "The API key is not valid. Check it, or create an account with POST /api/v1/accounts.")
        }
        var context = context
        context.account = account
        return try await next(request, context)
    }

    static func unauthorized(_ code: String, _ detail: String) -> Problem {
        Problem(.unauthorized, code: code, detail: detail, headers: [.wwwAuthenticate: "Bearer realm=\"moments\""])
    }
}

import Foundation

import Foundation
import HTTPTypes
import Hummingbird
import Jobs

/// POST /api/v1/accounts: a new account and its API key (shown this once).
struct AccountsController {
    let service: JobService

    func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.post, "/api/v1/accounts", on: router, use: create)
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<AccountCreatedResponse> {
        var label: String?
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        if body.readableBytes > 0 {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
                throw Problem.badRequest("invalid_json", "The body must be a JSON object such as {\"label\": \"my phone\"}, or empty.")
            }
            if let unknown = object.keys.first(where: { $0 != "label" }) {
                throw Problem.badRequest("unknown_field", "Unknown field \"\(unknown)\". Accounts accept only \"label\".")
            }
            if let value = object["label"] {
                guard let text = value as? String, text.count <= 100 else {
                    throw Problem.badRequest("invalid_field", "\"label\" must be a string of at most 100 characters.")
                }
                label = text
            }
        }
        let (account, key) = try await service.createAccount(label: label)
        return EditedResponse(status: .created, response: AccountCreatedResponse(
            accountId: account.id, apiKey: key, plan: account.plan,
            message: "Keep this API key: it is shown only now. Send it as \"Authorization: Bearer <api_key>\"."))
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import Jobs

/// GET /health (the process answers) and GET /ready (it can take work).
struct HealthController {
    let service: JobService

    func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/health", on: router) { _, _ in HealthResponse(status: "ok") }
        table.add(.get, "/ready", on: router, use: ready)
    }

    struct HealthResponse: ResponseEncodable { var status: String }
    struct ReadyResponse: ResponseEncodable { var status: String; var checks: [String: JobService.Check] }

    @Sendable func ready(_ request: Request, context: AppRequestContext) async throws -> Response {
        let checks = await service.readiness()
        let failing = checks.filter { !$0.value.ok }
        if failing.isEmpty {
            return try ReadyResponse(status: "ready", checks: checks).response(from: request, context: context)
        }
        let detail = failing.keys.sorted().map { "\($0): \(failing[$0]!.detail)" }.joined(separator: "; ")
        throw Problem(.serviceUnavailable, code: "not_ready", detail: "The server cannot take work now (\(detail)).",
                      headers: [.retryAfter: "30"])
    }
}

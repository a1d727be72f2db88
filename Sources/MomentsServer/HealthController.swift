import Foundation
import HTTPEdge
import HTTPTypes
import Hummingbird
import Wording

/// GET /health (the process answers) and GET /ready (it can take work).
struct HealthController {
    let readiness: Readiness
    let cacheSeconds: Double

    func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/health", on: router) { _, _ in HealthResponse(status: "ok") }
        table.add(.get, "/ready", on: router, use: ready)
    }

    /// `{"status":"ready"}`, or a 503 that says no more: the failing checks (paths, free space) go
    /// to the log. Checks run at most every `http.readyCacheSeconds`.
    @Sendable func ready(_ request: Request, context: AppRequestContext) async throws -> HealthResponse {
        let checks = await readiness.cachedReadiness(maxAge: cacheSeconds)
        let failing = checks.filter { !$0.value.ok }
        if failing.isEmpty { return HealthResponse(status: "ready") }
        let reasons = failing.keys.sorted().map { "\($0): \(failing[$0]!.detail)" }.joined(separator: "; ")
        context.logger.warning("not ready", metadata: ["checks": "\(reasons)"])
        throw Problem(
            .serviceUnavailable, code: "not_ready", detail: Say.notReady,
            headers: [.retryAfter: "30"])
    }
}

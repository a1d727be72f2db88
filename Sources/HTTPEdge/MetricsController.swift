import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Telemetry
import Wording

/// GET /metrics: every metric of this process in the Prometheus text format. With a
/// `metrics.token` the request needs `Authorization: Bearer <token>` (401 otherwise); without one
/// it is open. `refresh` runs before each answer (the queue sampler).
public struct MetricsController: Sendable {
    public let token: String
    public let refresh: @Sendable () async -> Void

    public init(token: String, refresh: @escaping @Sendable () async -> Void = {}) {
        self.token = token
        self.refresh = refresh
        MetricsExporter.bootstrap()
    }

    public func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/metrics", on: router) { request, context in try await self.metrics(request, context: context)
        }
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/metrics") { request, context in try await self.metrics(request, context: context) }
    }

    public func metrics(_ request: Request, context: some RequestContext) async throws -> Response {
        guard Self.authorized(request.headers[.authorization], token: token) else {
            throw Problem(
                .unauthorized, code: "invalid_metrics_token",
                detail: Say.metricsToken,
                headers: [.wwwAuthenticate: "Bearer realm=\"moments-metrics\""])
        }
        await refresh()
        return Response(
            status: .ok, headers: [.contentType: MetricsExporter.contentType],
            body: .init(byteBuffer: ByteBuffer(bytes: MetricsExporter.exposition())))
    }

    /// True when no token is configured, or the header is `Bearer <token>` (compared in constant time).
    public static func authorized(_ header: String?, token: String) -> Bool {
        if token.isEmpty { return true }
        guard let header else { return false }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return false }
        let given = Array(parts[1].trimmingCharacters(in: .whitespaces).utf8)
        let expected = Array(token.utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<expected.count { difference |= expected[index] ^ (index < given.count ? given[index] : 0) }
        return difference == 0
    }
}

import Hummingbird
import Telemetry

/// Outermost middleware: counts every answered request and times it to the last byte of its
/// response, labelled with the route pattern the router matched (`/api/v1/jobs/{id}/status`),
/// never the raw path (ids would make a series per job); requests no route matched are `unmatched`.
public struct HTTPMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = ContinuousClock.now
        let method = request.method.rawValue
        do {
            var response = try await next(request, context)
            let status = Int(response.status.code)
            let body = response.body
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer {
                    HTTPMetrics.record(
                        route: Self.route(context), method: method, status: status,
                        duration: ContinuousClock.now - start)
                }
                try await body.write(writer)
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError).map { Int($0.status.code) } ?? 500
            HTTPMetrics.record(
                route: Self.route(context), method: method, status: status, duration: ContinuousClock.now - start)
            throw error
        }
    }

    /// The matched route's pattern; `unmatched` when none matched.
    public static func route(_ context: Context) -> String {
        guard let path = context.endpointPath, path != "NotFound", path.hasPrefix("/") else {
            return HTTPMetrics.unmatchedRoute
        }
        return path
    }
}

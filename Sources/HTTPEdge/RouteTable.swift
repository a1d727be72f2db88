import HTTPTypes
import Hummingbird

/// Registers routes on the router and remembers each (method, path), so a test can hold the
/// OpenAPI document against the routes that really exist.
public final class RouteTable: @unchecked Sendable {
    public struct Route: Hashable, Sendable, CustomStringConvertible {
        public var method: String
        /// OpenAPI style: /api/v1/jobs/{id}
        public var path: String
        public var description: String { "\(method) \(path)" }
    }

    public private(set) var routes: [Route] = []

    public init() {}

    /// `path` uses Hummingbird's `:name` parameters.
    public func add<R: ResponseGenerator>(
        _ method: HTTPRequest.Method, _ path: String, on router: some RouterMethods<AppRequestContext>,
        use handler: @escaping @Sendable (Request, AppRequestContext) async throws -> R
    ) {
        router.on(RouterPath(path), method: method, use: handler)
        let openAPIPath = path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
        routes.append(Route(method: method.rawValue.lowercased(), path: openAPIPath))
    }
}

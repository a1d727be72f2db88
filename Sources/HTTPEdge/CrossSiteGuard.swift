import Foundation
import HTTPTypes
import Hummingbird
import Wording

/// Refuses state-changing requests (anything but GET, HEAD and OPTIONS) that a browser sent for
/// another web site: an `Origin` header that is not the service's own (`http.publicBaseUrl`, or
/// the host the request was sent to), or, without one, `Sec-Fetch-Site: cross-site|same-site`.
///
/// Why: a page on any site can make its visitors' browsers send a "simple" request (a form post,
/// or fetch with `text/plain`) to this service without asking it first. Sign-up needs no key, so
/// such a page could spend its visitors' sign-up allowance (measured before: a `text/plain` POST
/// /api/v1/accounts from any origin made an account). Every other state-changing endpoint needs
/// `Authorization: Bearer`, which a simple request cannot carry (the key is taken from that header
/// only: no query parameter, no cookie), and the service answers no CORS preflight, so a foreign
/// page cannot send one with a key either; refusing them here too costs nothing.
///
/// API clients (curl, the apps, servers) send no `Origin`; the studio is served by the service
/// itself, so its requests carry the service's own origin. Refused before anything else runs
/// (the sign-up allowance is not touched).
public struct CrossSiteGuard<Context: RequestContext>: RouterMiddleware {
    /// The service's own origin ("https://moments.example", "http://127.0.0.1:8000"), normalised.
    public let ownOrigin: String?

    public init(baseURL: String) {
        ownOrigin = Self.normalised(origin: baseURL)
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if Self.isSafe(request.method) || isSameOrigin(request) { return try await next(request, context) }
        throw Problem(
            .forbidden, code: "cross_site_request", title: Say.Title.crossSite,
            detail:
                Say.crossSite
        )
    }

    public static func isSafe(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options
    }

    /// No sign of another site: no Origin (and no cross-site fetch metadata), or the service's own
    /// origin, or an origin naming the very host and port the request was sent to.
    public func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else {
            let site = request.headers[Self.secFetchSite]?.lowercased()
            return site != "cross-site" && site != "same-site"
        }
        // "null" (a sandboxed page, a redirect, a no-referrer form) and anything unparsable: refused.
        guard let normalised = Self.normalised(origin: origin) else { return false }
        if normalised == ownOrigin { return true }
        guard let authority = request.head.authority,
            let scheme = normalised.split(separator: ":", maxSplits: 1).first
        else { return false }
        return Self.normalised(origin: "\(scheme)://\(authority)") == normalised
    }

    public static var secFetchSite: HTTPField.Name { HTTPField.Name("Sec-Fetch-Site")! }

    /// "scheme://host[:port]" in lower case without the scheme's default port; nil when `text` is
    /// not an http(s) origin (or URL, whose path is dropped).
    public static func normalised(origin text: String) -> String? {
        guard let components = URLComponents(string: text.trimmingCharacters(in: .whitespaces)),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host?.lowercased(), !host.isEmpty,
            components.user == nil, components.password == nil
        else { return nil }
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let defaultPort = scheme == "https" ? 443 : 80
        if let port = components.port, port != defaultPort { return "\(scheme)://\(shownHost):\(port)" }
        return "\(scheme)://\(shownHost)"
    }
}

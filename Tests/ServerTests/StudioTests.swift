import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// The web studio's files: served from the binary's resources with a strict CSP, ETags and
/// Cache-Control; nothing but its own files.
@Suite("The web studio's files", .onceAcrossEngines)
struct StudioTests {
    @Test func pageAndAssets() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let page = try await client.get("/", key: nil)
            #expect(page.status == .ok && page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.text.contains("<script type=\"module\" src=\"/studio/app.js\"></script>"))
            #expect(page.headers[.cacheControl] == "no-cache")
            let csp = try #require(page.headers[.contentSecurityPolicy])
            #expect(
                csp.contains("script-src 'self';") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe"))
            let etag = try #require(page.headers[.eTag])
            let again = try await client.get("/", key: nil, headers: [.ifNoneMatch: etag])
            #expect(again.status == .notModified && again.body.readableBytes == 0)

            for (name, type) in [
                ("app.js", "text/javascript; charset=utf-8"), ("studio.css", "text/css; charset=utf-8")
            ] {
                let asset = try await client.get("/studio/\(name)", key: nil)
                #expect(asset.status == .ok && asset.headers[.contentType] == type)
                #expect(asset.headers[.cacheControl]?.contains("max-age=") == true && asset.headers[.eTag] != etag)
                #expect(asset.headers[.xContentTypeOptions] == "nosniff")
            }
            for name in ["missing.js", "..%2Fopenapi.json", "%2e%2e", "index.html%00.js"] {
                try await client.get("/studio/\(name)", key: nil).expectProblem(.notFound)
            }
        }
    }
}

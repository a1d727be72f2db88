import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// State-changing requests a browser sends for a page of another site are refused (403
/// cross_site_request) before anything else runs; sign-up takes a body only as JSON; the studio's
/// own requests and API clients without an Origin work as before. On a live server, through
/// AsyncHTTPClient (a refused request with a body ends its connection; this client opens another;
/// it sends `Host: localhost:<port>`, so the service's own origin by host is http://localhost:<port>).
@Suite("Hostile clients: cross-site requests", .onceAcrossEngines)
struct CrossSiteTests {
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!

    static func signUp(
        _ client: any TestClientProtocol, _ headers: HTTPFields, body: String? = nil
    ) async throws -> TestResponse {
        try await client.executeRequest(
            uri: "/api/v1/accounts", method: .post, headers: headers, body: ByteBuffer(string: body ?? ""))
    }

    /// The simple requests a page of another site can make a visitor's browser send to sign-up
    /// are refused and spend none of the client's sign-up allowance (2 an hour here); the studio's
    /// sign-up (its own origin, no body, or a JSON body) still works and does spend it.
    @Test func aForeignSignUpIsRefusedAndTheStudiosWorks() async throws {
        let server = try await TestServer { s in
            s.workers = 0
            s.accountsPerAddressPerHour = 2
            s.publicBaseURL = "https://moments.example"
        }
        try await withServer(server, .ahc(.http)) { client in
            let port = try #require(client.port)
            let label = #"{"label": "x"}"#
            // A form of another site posting text/plain (what the review measured: it made an account).
            let problem = try await Self.signUp(
                client, [.origin: "https://evil.example", .contentType: "text/plain"], body: label
            ).expectProblem(.forbidden, code: "cross_site_request")
            #expect((problem["detail"] as? String)?.contains("another web site") == true, "\(problem)")
            for headers: HTTPFields in [
                // fetch(no-cors) without a body, a urlencoded form, a sandboxed page (Origin: null).
                [.origin: "https://evil.example"],
                [.origin: "http://localhost.evil.example", .contentType: "application/x-www-form-urlencoded"],
                [.origin: "null", .contentType: "multipart/form-data; boundary=x"],
                // Another port of the same host is another origin.
                [.origin: "http://localhost:\(port + 1)", .contentType: "text/plain"],
                // No Origin, but the browser says the page is another site's.
                [Self.secFetchSite: "cross-site", .contentType: "text/plain"]
            ] {
                try await Self.signUp(client, headers, body: label).expectProblem(
                    .forbidden, code: "cross_site_request")
            }
            // No Origin at all (an old browser's form): a body that is not declared JSON is refused.
            try await Self.signUp(client, [.contentType: "text/plain"], body: label)
                .expectProblem(.unsupportedMediaType, code: "unsupported_media_type")

            // The studio: its own origin (the host the request went to, or http.publicBaseUrl),
            // no body (what it sends) or a JSON one.
            let studio = try await Self.signUp(
                client, [.origin: "http://localhost:\(port)", Self.secFetchSite: "same-origin"])
            #expect(studio.status == .created, "\(studio.text)")
            let labelled = try await Self.signUp(
                client, [.origin: "https://moments.example", .contentType: "application/json; charset=utf-8"],
                body: label)
            #expect(labelled.status == .created, "\(labelled.text)")
            #expect(try labelled.json()["api_key"] is String)
            // The allowance was spent by those two only.
            try await Self.signUp(client, [:]).expectProblem(.tooManyRequests, code: "too_many_accounts")
        }
    }

    /// Every state-changing endpoint refuses another site's origin, even with a key (a simple
    /// request cannot carry one; this is a second wall), while API clients with a key and no
    /// Origin (curl, the apps) and the studio's own requests work: key creation, webhook
    /// registration, a multipart upload, and a tus upload's creation.
    @Test func keyedEndpointsRefuseForeignOriginsAndServeTheirOwn() async throws {
        let server = try await TestServer { s in
            s.workers = 0
            s.webhooks.allowPrivateTargets = true
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .ahc(.http)) { client in
            let port = try #require(client.port)
            let (_, key) = try await client.createAccount()
            let foreign: HTTPFields = [.origin: "https://evil.example"]
            let own: HTTPFields = [.origin: "http://localhost:\(port)"]
            func keys(_ extra: HTTPFields) async throws -> TestResponse {
                var headers: HTTPFields = [.authorization: "Bearer \(key)", .contentType: "application/json"]
                headers.append(contentsOf: extra)
                return try await client.executeRequest(
                    uri: "/api/v1/account/keys", method: .post, headers: headers, body: ByteBuffer(string: "{}"))
            }
            try await keys(foreign).expectProblem(.forbidden, code: "cross_site_request")
            #expect(try await keys([:]).status == .created)
            #expect(try await keys(own).status == .created)

            try await client.upload(key: key, file: video, headers: foreign)
                .expectProblem(.forbidden, code: "cross_site_request")
            let uploaded = try await client.upload(key: key, file: video, headers: own)
            #expect(uploaded.status == .ok, "\(uploaded.text)")
            let plain = try await client.upload(key: key, file: video)
            #expect(plain.status == .ok, "\(plain.text)")

            func tus(_ extra: HTTPFields) async throws -> TestResponse {
                var headers: HTTPFields = [
                    .authorization: "Bearer \(key)", HTTPField.Name("Tus-Resumable")!: "1.0.0",
                    HTTPField.Name("Upload-Length")!: "\(video.count)",
                    HTTPField.Name("Upload-Metadata")!: "target_duration MTA=,quality bG93"
                ]
                headers.append(contentsOf: extra)
                return try await client.executeRequest(
                    uri: "/api/v1/uploads", method: .post, headers: headers, body: nil)
            }
            try await tus(foreign).expectProblem(.forbidden, code: "cross_site_request")
            #expect(try await tus([:]).status == .created)
            #expect(try await tus(own).status == .created)

            func webhook(_ extra: HTTPFields) async throws -> TestResponse {
                var headers: HTTPFields = [.authorization: "Bearer \(key)", .contentType: "application/json"]
                headers.append(contentsOf: extra)
                return try await client.executeRequest(
                    uri: "/api/v1/account/webhook", method: .put, headers: headers,
                    body: ByteBuffer(string: #"{"url": "http://127.0.0.1:9/hook"}"#))
            }
            try await webhook(foreign).expectProblem(.forbidden, code: "cross_site_request")
            #expect(try await webhook([:]).status == .ok)
            // Reading is not refused (a cross-site page cannot read the answer anyway).
            #expect(try await client.get("/api/v1/account", key: key, headers: foreign).status == .ok)
        }
    }
}

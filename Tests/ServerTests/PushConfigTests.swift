import Crypto
import Foundation
import MediaVocabulary
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import MomentsConfig
import Push
import Store
import Testing

/// The push feature's settings, device routes and provider token, without APNs traffic (the
/// stand-in's tests are PushTests).
@Suite("Push settings, devices and provider token")
struct PushConfigTests {
    /// A PKCS#8 P-256 key as Apple hands out (.p8), written to `path`; its private key.
    static func writeKey(_ path: String) throws -> P256.Signing.PrivateKey {
        let key = P256.Signing.PrivateKey()
        try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        return key
    }

    static func enabled(_ scratch: Scratch, _ push: inout PushSettings) throws {
        _ = try writeKey(scratch.path("key.p8"))
        push.keyPath = scratch.path("key.p8")
        push.keyId = "KEY1234567"
        push.teamId = "TEAM765432"
        push.topic = "app.moments.test"
    }

    @Test func everyKeyIsReadFromItsEnvironmentVariable() async throws {
        let reader = try await MomentsConfiguration.reader(
            environment: [
                "APNS_KEY_PATH": "/keys/AuthKey.p8", "APNS_KEY_ID": "K1", "APNS_TEAM_ID": "T1",
                "APNS_TOPIC": "com.example.app",
                "APNS_ENDPOINT": "https://push.example", "APNS_SANDBOX_ENDPOINT": "https://sandbox.example",
                "APNS_CA_FILE": "/ca.pem",
                "APNS_MAX_DEVICES_PER_ACCOUNT": "3", "APNS_RETRY_BACKOFF_SECONDS": "2.5"
            ], file: "Config/moments.json")
        let push = ServiceSettings(reader: reader).push
        #expect(
            push.keyPath == "/keys/AuthKey.p8" && push.keyId == "K1" && push.teamId == "T1"
                && push.topic == "com.example.app")
        #expect(
            push.endpoint == "https://push.example" && push.sandboxEndpoint == "https://sandbox.example"
                && push.caFile == "/ca.pem")
        #expect(push.maxDevicesPerAccount == 3 && push.retryBackoffSeconds == 2.5 && push.isEnabled)
        // The shipped defaults: off, Apple's two endpoints.
        let shipped = ServiceSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json")
        ).push
        #expect(shipped == PushSettings() && !shipped.isEnabled)
        #expect(
            shipped.endpoint == "https://api.push.apple.com"
                && shipped.sandboxEndpoint == "https://api.sandbox.push.apple.com")
    }

    /// A key path set with anything wrong stops the start with a sentence naming the setting.
    @Test func aBadKeyIsAClearStartUpError() async throws {
        let scratch = Scratch()
        var push = PushSettings()
        try Self.enabled(scratch, &push)
        #expect(try APNsCredentials.load(push) != nil)
        #expect(try APNsCredentials.load(PushSettings()) == nil, "no key: off")

        func refusal(_ change: (inout PushSettings) throws -> Void) throws -> String {
            var settings = push
            try change(&settings)
            do {
                _ = try APNsCredentials.load(settings)
                return "accepted"
            } catch let error as APNsConfigurationError {
                return error.description
            }
        }
        try "not a key".write(toFile: scratch.path("garbage.p8"), atomically: true, encoding: .utf8)
        #expect(try refusal { $0.keyPath = scratch.path("garbage.p8") }.contains("APNS_KEY_PATH"))
        #expect(try refusal { $0.keyPath = scratch.path("missing.p8") }.contains("cannot be read"))
        #expect(try refusal { $0.keyId = "" }.contains("APNS_KEY_ID"))
        #expect(try refusal { $0.teamId = "a b" }.contains("APNS_TEAM_ID"))
        #expect(try refusal { $0.topic = "" }.contains("APNS_TOPIC"))
        #expect(try refusal { $0.endpoint = "http://api.push.apple.com" }.contains("APNS_ENDPOINT"))
        #expect(try refusal { $0.sandboxEndpoint = "https://x.example/path" }.contains("APNS_SANDBOX_ENDPOINT"))
        try "nothing".write(toFile: scratch.path("ca.pem"), atomically: true, encoding: .utf8)
        #expect(try refusal { $0.caFile = scratch.path("ca.pem") }.contains("APNS_CA_FILE"))

        // The service does not start with it.
        await #expect(throws: APNsConfigurationError.self) {
            _ = try await TestServer { s in
                s.push = push
                s.push.keyPath = scratch.path("garbage.p8")
            }
        }
    }

    /// Without a key nothing is pushed, and the routes say so.
    @Test func withoutAKeyPushesAreOff() async throws {
        let server = try await TestServer { $0.workers = 0 }
        #expect(server.service.pushes == nil)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let response = try await PushTests.register(client, key: key, token: String(repeating: "a", count: 64))
            _ = try response.expectProblem(.serviceUnavailable, code: "push_unavailable")
            let list = try await client.get("/api/v1/account/devices", key: key).json()
            #expect(list["push_enabled"] as? Bool == false && (list["devices"] as? [Any])?.isEmpty == true)
        }
    }

    /// Every byte from the client is checked: the token, the body, the cap.
    @Test func devicesAreValidatedCappedListedAndRemoved() async throws {
        let server = try await TestServer { s in
            s.workers = 0
            try? Self.enabled(Scratch.shared, &s.push)
            s.push.maxDevicesPerAccount = 2
        }
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let (_, otherKey) = try await client.createAccount()
            let token = String(repeating: "ab", count: 32)
            for hostile in [
                "abc", String(repeating: "a", count: 63), String(repeating: "a", count: 65),
                String(repeating: "g", count: 64),
                String(repeating: "a", count: 62) + "%20", String(repeating: "a", count: 600)
            ] {
                _ = try await PushTests.register(client, key: key, token: hostile).expectProblem(
                    .unprocessableContent, code: "invalid_device_token")
            }
            let put = { (body: String) in
                try await client.executeRequest(
                    uri: "/api/v1/account/devices/\(token)", method: .put,
                    headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                    body: ByteBuffer(string: body))
            }
            _ = try await put("not json").expectProblem(.badRequest, code: "invalid_json")
            _ = try await put("{\"environment\": \"production\", \"admin\": true}").expectProblem(
                .badRequest, code: "unknown_field")
            _ = try await put("{\"environment\": \"staging\"}").expectProblem(
                .unprocessableContent, code: "invalid_environment")
            _ = try await put("{}").expectProblem(.unprocessableContent, code: "invalid_environment")
            _ = try await put(String(repeating: " ", count: 2000) + "{}").expectProblem(
                .contentTooLarge, code: "body_too_large")
            let unauthenticated = try await client.executeRequest(
                uri: "/api/v1/account/devices/\(token)", method: .put, headers: [:],
                body: ByteBuffer(string: "{\"environment\": \"production\"}"))
            #expect(unauthenticated.status == .unauthorized)

            let created = try await PushTests.register(client, key: key, token: token)
            #expect(created.status == .created)
            let device = try created.json()
            #expect(
                device["token"] as? String == token && device["environment"] as? String == "production"
                    && device["created_at"] is String)
            #expect(try await PushTests.register(client, key: key, token: token, environment: "sandbox").status == .ok)
            #expect(
                try await PushTests.register(client, key: key, token: String(repeating: "cd", count: 32)).status
                    == .created)
            let refused = try await PushTests.register(client, key: key, token: String(repeating: "ef", count: 32))
            #expect(try refused.expectProblem(.conflict, code: "device_limit")["limit"] as? Int == 2)

            let list = try await client.get("/api/v1/account/devices", key: key).json()
            let devices = list["devices"] as? [[String: Any]] ?? []
            #expect(devices.compactMap { $0["token"] as? String } == [token, String(repeating: "cd", count: 32)])
            #expect(
                devices.first?["environment"] as? String == "sandbox" && list["limit"] as? Int == 2
                    && list["push_enabled"] as? Bool == true)
            #expect(
                (try await client.get("/api/v1/account/devices", key: otherKey).json()["devices"] as? [Any])?.isEmpty
                    == true)

            // Another account cannot remove it; its holder can, once.
            _ = try await client.get("/api/v1/account/devices/\(token)", key: otherKey, method: .delete).expectProblem(
                .notFound, code: "device_not_found")
            #expect(
                try await client.get("/api/v1/account/devices/\(token)", key: key, method: .delete).status == .noContent
            )
            _ = try await client.get("/api/v1/account/devices/\(token)", key: key, method: .delete).expectProblem(
                .notFound, code: "device_not_found")
            _ = try await client.get("/api/v1/account/devices/xyz", key: key, method: .delete).expectProblem(
                .unprocessableContent, code: "invalid_device_token")
        }
    }

    /// The provider token is signed ES256 with kid, iss and iat, reused for many pushes, replaced
    /// between 20 and 60 minutes of age (not before), and replaced once after ExpiredProviderToken.
    @Test func providerTokenIsReusedThenRefreshed() async throws {
        let scratch = Scratch()
        var push = PushSettings()
        try Self.enabled(scratch, &push)
        let key = try Self.writeKey(scratch.path("key.p8"))
        let credentials = try #require(try APNsCredentials.load(push))
        let tokens = APNsProviderToken(credentials: credentials)
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)

        let first = try await tokens.current(now: t0)
        for minutes in [1.0, 10, 19.9, 20, 49] {
            #expect(try await tokens.current(now: t0 + minutes * 60) == first, "reused at \(minutes) min")
        }
        let second = try await tokens.current(now: t0 + 50 * 60)
        #expect(second.jwt != first.jwt && second.issuedAt == t0 + 50 * 60)
        #expect(
            second.issuedAt.timeIntervalSince(first.issuedAt) >= 20 * 60
                && second.issuedAt.timeIntervalSince(first.issuedAt) < 60 * 60)
        // Concurrent callers share one signing.
        await tokens.expired(second.jwt)
        let concurrent = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 { group.addTask { try await tokens.current(now: t0 + 51 * 60).jwt } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(concurrent.count == 1 && !concurrent.contains(second.jwt))
        #expect(await tokens.signedCount == 3)
        // A stale ExpiredProviderToken (for a token already replaced) changes nothing.
        await tokens.expired(first.jwt)
        #expect(try await tokens.current(now: t0 + 52 * 60).jwt == concurrent.first)

        // What Apple checks, with the public half only.
        struct Claims: JWTPayload {
            var iss: String
            var iat: Int
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let verifier = JWTKeyCollection()
        await verifier.add(
            ecdsa: try ES256PublicKey(pem: key.publicKey.pemRepresentation), kid: JWKIdentifier(string: "KEY1234567"))
        let claims = try await verifier.verify(first.jwt, as: Claims.self)
        #expect(claims.iss == "TEAM765432" && claims.iat == Int(t0.timeIntervalSince1970))
        let header =
            try JSONSerialization.jsonObject(with: Self.base64URL(String(first.jwt.split(separator: ".")[0])))
            as? [String: Any]
        #expect(header?["alg"] as? String == "ES256" && header?["kid"] as? String == "KEY1234567")
    }

    static func base64URL(_ text: String) -> Data {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64) ?? Data()
    }

    /// The alert in the user's words, always under APNs' 4 KB, whatever the user named the file.
    @Test func payloadStaysSmallAndReadable() throws {
        var job = Job(
            id: "job-1", accountId: "a", targetDuration: 5, quality: .medium,
            input: JobInput(
                size: 1, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 1, height: 1,
                rotation: 0, frameRate: 30), estimatedSeconds: 1, now: Date())
        #expect(PushPayload(job: job) == nil, "pending: no push")
        job.status = .completed
        job.edit = JobEdit(sourceName: "Holiday\n" + String(repeating: "🎉", count: 5000))
        let completed = try #require(PushPayload(job: job))
        #expect(completed.aps.alert.title == "Your highlight is ready" && !completed.aps.alert.body.contains("\n"))
        #expect(completed.aps.alert.body.hasPrefix("The highlight of \u{201C}Holiday "))
        #expect(try completed.json().utf8.count < PushPayload.maxBytes)
        job.status = .failed
        job.errorMessage = String(repeating: "x", count: 10_000)
        let failed = try #require(PushPayload(job: job))
        #expect(failed.aps.alert.title == "Your highlight could not be made" && failed.aps.alert.body.count <= 180)
        #expect(try failed.json().utf8.count < PushPayload.maxBytes)
        job.status = .cancelled
        #expect(PushPayload(job: job) == nil, "cancelled by the user: no push")
    }

    /// Without `apns.caFile` the stand-in's self-signed certificate is not trusted: nothing is sent.
    @Test func theCAFileIsWhatMakesTheStandInTrusted() async throws {
        try await APNsStandIn.with { standIn in
            var push = PushSettings()
            standIn.configure(&push)
            push.caFile = ""
            let client = APNsClient(credentials: try #require(try APNsCredentials.load(push)))
            let (answer, _) = await client.send(
                payload: "{}", token: APNsStandIn.token("600d", 1), environment: .production, collapseId: "j",
                now: Date())
            #expect(answer.statusCode == nil && answer.reason == "tls", "\(answer)")
            #expect(try await standIn.hits().isEmpty)
        }
    }
}

extension Scratch {
    /// A scratch folder for the whole test process (keys written while configuring a server).
    static let shared = Scratch()
}

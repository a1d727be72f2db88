import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// Health, and the features a deployment turns on by configuration: off, they say so plainly.
@Suite("Router: health and optional features")
struct ServiceRoutesTests {
    @Test func healthAndReadinessAnswer() async throws {
        try await RouterHarness().run { client in
            let health = try await client.send(.get, "/health").object()
            #expect(health["status"] as? String == "ok")
            let ready = try await client.send(.get, "/ready").object()
            #expect(ready["status"] as? String == "ready", "\(ready)")
        }
    }

    @Test func pushesWithoutAnAPNsKeyAreUnavailable() async throws {
        try await RouterHarness().run { client in
            let (_, key) = try await client.account()
            try await client.send(
                .put, "/api/v1/account/devices/" + String(repeating: "ab", count: 32), key: key,
                headers: [.contentType: "application/json"], body: .init(string: #"{"environment":"production"}"#)
            ).problem(.serviceUnavailable, "push_unavailable")
        }
    }

    @Test func subscriptionsWithoutAppleRootsAreUnavailable() async throws {
        try await RouterHarness().run { client in
            let (_, key) = try await client.account()
            try await client.send(
                .post, "/api/v1/subscriptions/apple", key: key, headers: [.contentType: "application/json"],
                body: .init(string: #"{"signed_transaction":"x.y.z"}"#)
            ).problem(.serviceUnavailable, "app_store_unavailable")
        }
    }

    @Test func aWebhookToAPrivateAddressIsRefused() async throws {
        try await RouterHarness().run { client in
            let (_, key) = try await client.account()
            try await client.send(
                .put, "/api/v1/account/webhook", key: key, headers: [.contentType: "application/json"],
                body: .init(string: #"{"url":"https://127.0.0.1/hook"}"#)
            ).problem(.badRequest, "webhook_private_target")
        }
    }
}

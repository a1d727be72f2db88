import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// Accounts and keys through the router: what a new user gets, and what a bad key gets.
@Suite("Router: accounts and keys")
struct AccountRoutesTests {
    @Test func aNewAccountsKeyWorksAtOnceOnTheFreePlan() async throws {
        try await RouterHarness().run { client in
            let (id, key) = try await client.account()
            #expect(key.count >= 40)
            let account = try await client.send(.get, "/api/v1/account", key: key)
            #expect(account.status == .ok)
            let json = try account.object()
            #expect(json["account_id"] as? String == id)
            #expect(json["plan"] as? String == "free")
            let usage = try #require(json["usage"] as? [String: Any])
            #expect(usage["used"] as? Int == 0)
        }
    }

    @Test func requestsWithoutAValidKeyAreRefused() async throws {
        try await RouterHarness().run { client in
            try await client.send(.get, "/api/v1/jobs").problem(.unauthorized, "missing_api_key")
            try await client.send(.get, "/api/v1/jobs", key: "mk_" + String(repeating: "x", count: 43))
                .problem(.unauthorized, "invalid_api_key")
        }
    }

    @Test func aRevokedKeyIsRefusedOnTheNextRequest() async throws {
        try await RouterHarness().run { client in
            let (_, key) = try await client.account()
            let created = try await client.send(.post, "/api/v1/account/keys", key: key)
            #expect(created.status == .created)
            let second = try created.object()
            let secondKey = try #require(second["api_key"] as? String)
            let secondId = try #require(second["id"] as? String)
            #expect(try await client.send(.get, "/api/v1/account", key: secondKey).status == .ok)
            let revoked = try await client.send(.delete, "/api/v1/account/keys/\(secondId)", key: key)
            #expect(revoked.status == .ok)
            try await client.send(.get, "/api/v1/account", key: secondKey).problem(.unauthorized, "revoked_api_key")
            #expect(try await client.send(.get, "/api/v1/account", key: key).status == .ok)
        }
    }
}

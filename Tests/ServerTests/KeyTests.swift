import Foundation
import GRDB
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SQLiteStore
import Store
import Testing

/// API keys as their own resource: several per account, listed without secrets, revoked at once
/// (no cache between the database and the next request); disabled accounts.
@Suite("API keys and account state")
struct KeyTests {
    func createKey(_ client: some TestClientProtocol, key: String, body: String? = nil) async throws -> TestResponse {
        try await client.executeRequest(
            uri: "/api/v1/account/keys", method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: body.map { ByteBuffer(string: $0) })
    }

    func keys(_ client: some TestClientProtocol, key: String) async throws -> [[String: Any]] {
        let response = try await client.get("/api/v1/account/keys", key: key)
        #expect(response.status == .ok, "\(response.text)")
        return try response.json()["keys"] as? [[String: Any]] ?? []
    }

    @Test func createListAndRevokeKeys() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let (accountId, first) = try await client.createAccount()
            let listed = try await keys(client, key: first)
            #expect(listed.count == 1 && listed[0]["current"] as? Bool == true && listed[0]["revoked_at"] is NSNull)
            let firstId = try #require(listed[0]["id"] as? String)
            #expect((listed[0]["prefix"] as? String).map { first.hasPrefix($0) && $0.count == 10 } == true)

            // A second key, shown once; it works for the same account.
            let created = try await createKey(client, key: first, body: #"{"label": "laptop"}"#)
            #expect(created.status == .created, "\(created.text)")
            let json = try created.json()
            let second = try #require(json["api_key"] as? String)
            let secondId = try #require(json["id"] as? String)
            #expect(
                second.hasPrefix("mk_") && second != first && json["label"] as? String == "laptop"
                    && json["created_at"] is String)
            #expect((json["prefix"] as? String).map { second.hasPrefix($0) } == true)
            #expect(try await client.get("/api/v1/account", key: second).json()["account_id"] as? String == accountId)

            // The list: both keys, the current one marked, no secrets or hashes anywhere.
            let response = try await client.get("/api/v1/account/keys", key: second)
            #expect(
                !response.text.contains(first) && !response.text.contains(second)
                    && !response.text.contains(Account.hash(apiKey: first)))
            let both = try response.json()["keys"] as? [[String: Any]] ?? []
            #expect(Set(both.compactMap { $0["id"] as? String }) == [firstId, secondId])
            #expect(both.first { $0["id"] as? String == secondId }?["current"] as? Bool == true)
            #expect(both.first { $0["id"] as? String == firstId }?["current"] as? Bool == false)
            #expect(both.allSatisfy { $0["api_key"] == nil && $0["hash"] == nil })

            // Revoke the first key: the very next request with it is refused.
            _ = try await client.get("/api/v1/account", key: first)  // answered (and would have been cached before)
            let revoked = try await client.get("/api/v1/account/keys/\(firstId)", key: second, method: .delete)
            #expect(revoked.status == .ok, "\(revoked.text)")
            #expect(try revoked.json()["revoked_at"] is String)
            try await client.get("/api/v1/account", key: first).expectProblem(.unauthorized, code: "revoked_api_key")
            try await client.get("/api/v1/jobs/\(UUID().uuidString)/status", key: first).expectProblem(
                .unauthorized, code: "revoked_api_key")
            #expect(try await client.get("/api/v1/account", key: second).status == .ok)
            // Revoking it again changes nothing; it stays listed as revoked.
            #expect(try await client.get("/api/v1/account/keys/\(firstId)", key: second, method: .delete).status == .ok)
            #expect(
                try await keys(client, key: second).first { $0["id"] as? String == firstId }?["revoked_at"] is String)

            // The last active key cannot be revoked (the account would be locked out).
            try await client.get("/api/v1/account/keys/\(secondId)", key: second, method: .delete).expectProblem(
                .conflict, code: "last_active_key")
            #expect(try await client.get("/api/v1/account", key: second).status == .ok)

            // Unknown ids and another account's keys look the same: 404, and the other key still works.
            try await client.get("/api/v1/account/keys/\(UUID().uuidString)", key: second, method: .delete)
                .expectProblem(.notFound, code: "key_not_found")
            let (_, otherKey) = try await client.createAccount()
            let otherId = try #require(try await keys(client, key: otherKey).first?["id"] as? String)
            _ = try await createKey(client, key: otherKey)
            try await client.get("/api/v1/account/keys/\(otherId)", key: second, method: .delete).expectProblem(
                .notFound, code: "key_not_found")
            #expect(try await client.get("/api/v1/account", key: otherKey).status == .ok)
        }
    }

    @Test func keyRequestsAreChecked() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            try await createKey(client, key: key, body: "[1]").expectProblem(.badRequest, code: "invalid_json")
            try await createKey(client, key: key, body: #"{"name": "x"}"#).expectProblem(
                .badRequest, code: "unknown_field")
            try await createKey(client, key: key, body: #"{"label": 5}"#).expectProblem(
                .badRequest, code: "invalid_field")
            try await client.get("/api/v1/account/keys", key: nil).expectProblem(.unauthorized, code: "missing_api_key")
            // At most 10 active keys.
            for _ in 1..<APIKey.maxActivePerAccount {
                #expect(try await createKey(client, key: key).status == .created)
            }
            let refused = try await createKey(client, key: key).expectProblem(.conflict, code: "too_many_keys")
            #expect(refused["limit"] as? Int == APIKey.maxActivePerAccount)
        }
    }

    /// A disabled account gets 403 on every authenticated route, with each of its keys; enabled
    /// again, it works at once.
    @Test func disabledAccountIsRefused() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let second = try #require(try await createKey(client, key: key).json()["api_key"] as? String)
            let (_, bystander) = try await client.createAccount()
            try await server.service.database.setDisabled(accountId: id, true, now: Date())
            for k in [key, second] {
                let problem = try await client.get("/api/v1/account", key: k).expectProblem(
                    .forbidden, code: "account_disabled")
                #expect((problem["detail"] as? String)?.contains("contact support") == true)
                try await client.get("/api/v1/jobs", key: k).expectProblem(.forbidden, code: "account_disabled")
                try await client.get("/api/v1/jobs/\(UUID().uuidString)/status", key: k).expectProblem(
                    .forbidden, code: "account_disabled")
                try await client.get("/api/v1/account/keys", key: k).expectProblem(.forbidden, code: "account_disabled")
                try await client.upload(key: k, file: Data([0, 1, 2])).expectProblem(
                    .forbidden, code: "account_disabled")
            }
            #expect(try await client.get("/api/v1/account", key: bystander).status == .ok)
            try await server.service.database.setDisabled(accountId: id, false, now: Date())
            #expect(try await client.get("/api/v1/account", key: key).status == .ok)
            #expect(try await client.get("/api/v1/account", key: second).status == .ok)
        }
    }

    /// lastUsedAt is recorded off the request path, at most about once a minute per key.
    @Test func lastUseIsRecorded() async throws {
        let clock = TestClock(Date())
        let server = try await TestServer(clock: clock)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            func lastUsed() async throws -> Date? {
                try await server.service.database.keys(accountId: id).first?.lastUsedAt
            }
            _ = try await client.get("/api/v1/account", key: key)
            await server.service.database.keyUsesRecorded()
            let first = try await lastUsed()
            #expect(first != nil)
            // More requests within the minute write nothing.
            clock.now = clock.now.addingTimeInterval(30)
            for _ in 0..<5 { _ = try await client.get("/api/v1/account", key: key) }
            await server.service.database.keyUsesRecorded()
            #expect(try await lastUsed() == first)
            // A minute later, one more write.
            clock.now = clock.now.addingTimeInterval(31)
            _ = try await client.get("/api/v1/account", key: key)
            await server.service.database.keyUsesRecorded()
            let later = try await lastUsed()
            #expect(later.map { $0 > first! } == true)
            let listed = try await keys(client, key: key)
            #expect(listed.first?["last_used_at"] is String)
        }
    }

    /// A database from before keys had their own table: the account's key moves there and keeps
    /// working; a revoked subscription stays revoked.
    @Test func migrationMovesExistingKeys() async throws {
        let scratch = Scratch()
        let path = scratch.path("moments.sqlite")
        let key = Account.newAPIKey()
        let created = Date(timeIntervalSince1970: 1_750_000_000)
        do {
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(sql: Self.v3Schema)
                try db.execute(
                    sql:
                        "INSERT INTO account (id, apiKeyHash, apiKeyPrefix, plan, label, createdAt) VALUES (?, ?, ?, 'free', 'old', ?)",
                    arguments: [
                        "0f8fad5b-d9cb-469f-a165-70867728950e", Account.hash(apiKey: key), String(key.prefix(10)),
                        created
                    ])
                try db.execute(
                    sql: """
                        INSERT INTO job (id, accountId, status, message, targetDuration, quality, input, estimatedSeconds, createdAt, updatedAt)
                        VALUES ('j1', '0f8fad5b-d9cb-469f-a165-70867728950e', 'completed', 'Done', 30, 'high',
                                '{"size":1,"duration":10,"container":"mp4","videoCodec":"h264","width":320,"height":180,"rotation":0,"frameRate":30}', 10, ?, ?);
                        INSERT INTO subscription (originalTransactionId, accountId, productId, expiresAt, state, lastSignedDate, environment, source, updatedAt)
                        VALUES ('o1', '0f8fad5b-d9cb-469f-a165-70867728950e', 'com.moments.pro.monthly', ?, 'revoked', ?, 'Production', 'admin', ?);
                        """,
                    arguments: [created, created, created.addingTimeInterval(86400 * 365 * 10), created, created])
            }
            try queue.close()
        }
        let db = try AppDatabase(path: path)
        guard case .valid(let account, let keyId) = try await db.authenticate(keyHash: Account.hash(apiKey: key)) else {
            Issue.record("the migrated key does not authenticate")
            return
        }
        #expect(
            account.id == "0f8fad5b-d9cb-469f-a165-70867728950e" && account.label == "old"
                && account.createdAt == created)
        #expect(!account.tester && account.disabledAt == nil)
        let keys = try await db.keys(accountId: account.id)
        #expect(keys.map(\.id) == [keyId] && keys[0].prefix == String(key.prefix(10)) && keys[0].createdAt == created)
        #expect(try await db.job(id: "j1")?.accountId == account.id)
        let subscription = try #require(try await db.subscriptions(accountId: account.id).first)
        #expect(subscription.state == .revoked && subscription.revokedAt != nil)
        // A later transaction of that original transaction does not reinstate it.
        let renewal = TransactionFacts(
            originalTransactionId: "o1", productId: "com.moments.pro.monthly",
            expiresAt: Date().addingTimeInterval(86400),
            revoked: false, appAccountToken: nil, environment: "Production", signedDate: Date())
        _ = try await db.applyTransaction(renewal, accountId: account.id, now: Date())
        #expect(try await db.entitlement(accountId: account.id, now: Date()).grantsPro == false)
        try db.close()
    }

    /// The schema of "v3 plans, quota ledger, subscriptions" as GRDB created it.
    static let v3Schema = """
        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
        INSERT INTO grdb_migrations VALUES ('v1 accounts and jobs'), ('v2 heartbeat'), ('v3 plans, quota ledger, subscriptions');
        CREATE TABLE "account" ("id" TEXT PRIMARY KEY NOT NULL, "apiKeyHash" TEXT NOT NULL UNIQUE, "apiKeyPrefix" TEXT NOT NULL,
            "plan" TEXT NOT NULL DEFAULT 'free', "label" TEXT, "createdAt" DATETIME NOT NULL);
        CREATE TABLE "job" ("id" TEXT PRIMARY KEY NOT NULL, "accountId" TEXT NOT NULL REFERENCES "account"("id") ON DELETE CASCADE,
            "status" TEXT NOT NULL, "stage" TEXT, "progress" INTEGER NOT NULL DEFAULT 0, "message" TEXT NOT NULL,
            "targetDuration" INTEGER NOT NULL, "quality" TEXT NOT NULL, "input" TEXT NOT NULL, "estimatedSeconds" INTEGER NOT NULL,
            "attempts" INTEGER NOT NULL DEFAULT 0, "createdAt" DATETIME NOT NULL, "startedAt" DATETIME, "finishedAt" DATETIME,
            "updatedAt" DATETIME NOT NULL, "processingSeconds" DOUBLE, "errorCode" TEXT, "errorMessage" TEXT, "output" TEXT,
            "segments" TEXT, "mediaDeletedAt" DATETIME, "quotaPeriod" TEXT, "quotaState" TEXT, "outputCap" INTEGER, "retentionHours" DOUBLE);
        CREATE INDEX "job_queue" ON "job"("status", "createdAt");
        CREATE INDEX "job_account" ON "job"("accountId", "createdAt");
        CREATE TABLE "heartbeat" ("id" INTEGER PRIMARY KEY, "at" DATETIME NOT NULL);
        CREATE TABLE "usage_ledger" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "accountId" TEXT NOT NULL REFERENCES "account"("id") ON DELETE CASCADE,
            "jobId" TEXT NOT NULL, "period" TEXT NOT NULL, "change" INTEGER NOT NULL, "reason" TEXT NOT NULL, "createdAt" DATETIME NOT NULL);
        CREATE INDEX "usage_ledger_account_period" ON "usage_ledger"("accountId", "period");
        CREATE TABLE "subscription" ("originalTransactionId" TEXT PRIMARY KEY NOT NULL, "accountId" TEXT REFERENCES "account"("id") ON DELETE SET NULL,
            "productId" TEXT NOT NULL, "expiresAt" DATETIME, "gracePeriodExpiresAt" DATETIME, "state" TEXT NOT NULL,
            "lastSignedDate" DATETIME NOT NULL, "environment" TEXT NOT NULL, "source" TEXT NOT NULL, "updatedAt" DATETIME NOT NULL);
        CREATE INDEX "subscription_account" ON "subscription"("accountId");
        CREATE TABLE "app_store_notification" ("notificationUUID" TEXT PRIMARY KEY NOT NULL, "notificationType" TEXT NOT NULL, "subtype" TEXT,
            "originalTransactionId" TEXT, "signedDate" DATETIME NOT NULL, "receivedAt" DATETIME NOT NULL, "applied" BOOLEAN NOT NULL);
        """
}

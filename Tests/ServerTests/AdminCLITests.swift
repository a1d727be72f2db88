import Foundation
import HummingbirdTesting
import Testing

/// `moments accounts …` on a storage folder, as an operator runs it.
@Suite("Admin CLI", .enabled(if: TestEngine.isEmbedded, "runs the CLI on the embedded database"))
struct AdminCLITests {
    func run(_ arguments: [String]) throws -> (Int32, String) {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    @Test func createGrantRevokeUsage() throws {
        let scratch = Scratch()
        let storage = scratch.path("storage")
        let (status, created) = try run(["accounts", "create", "--storage", storage, "--label", "ops", "--json"])
        #expect(status == 0, "\(created)")
        let id = try #require(json(created)["account_id"] as? String)
        #expect((json(created)["api_key"] as? String)?.hasPrefix("mk_") == true)
        #expect(json(try run(["accounts", "show", id, "--storage", storage, "--json"]).1)["plan"] as? String == "free")

        let (granted, grantOutput) = try run([
            "accounts", "grant-pro", id, "--until", "2099-01-31", "--storage", storage
        ])
        #expect(granted == 0, "\(grantOutput)")
        let shown = json(try run(["accounts", "show", id, "--storage", storage, "--json"]).1)
        #expect(shown["plan"] as? String == "pro" && shown["entitlement_state"] as? String == "active")
        #expect(shown["expires_at"] as? String == "2099-01-31T00:00:00Z")

        #expect(try run(["accounts", "revoke", id, "--storage", storage]).0 == 0)
        let revoked = json(try run(["accounts", "show", id, "--storage", storage, "--json"]).1)
        #expect(revoked["plan"] as? String == "free" && revoked["entitlement_state"] as? String == "revoked")

        let (usageStatus, usage) = try run(["accounts", "usage", id, "--storage", storage])
        #expect(
            usageStatus == 0 && usage.contains("no usage yet") && usage.contains("worker time today: 0 s of 1800 s"),
            "\(usage)")
        let (missing, message) = try run([
            "accounts", "show", "00000000-0000-0000-0000-000000000000", "--storage", storage
        ])
        #expect(missing != 0 && message.contains("no account"))
        let (badDate, dateMessage) = try run(["accounts", "grant-pro", id, "--until", "someday", "--storage", storage])
        #expect(badDate != 0 && dateMessage.contains("--until"))
    }

    /// `run` on a thread of its own (waiting for a process must not block the cooperative pool).
    func runOffPool(_ arguments: [String]) async throws -> (Int32, String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try run(arguments) }) }.start()
        }
    }

    func jsonArray(_ text: String) -> [[String: Any]] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]]) ?? []
    }

    /// Keys, rotation, revocation, disabling and testers, run by the operator while the server
    /// answers requests on the same storage: each change holds from the next request on.
    @Test func keysDisableAndTester() async throws {
        let server = try await TestServer()
        let storage = server.service.settings.storagePath
        try await withServer(server, .router) { client in
            let (id, oldKey) = try await client.createAccount()
            let (listed, keysOutput) = try await runOffPool(["accounts", "keys", id, "--storage", storage, "--json"])
            #expect(listed == 0, "\(keysOutput)")
            #expect(jsonArray(keysOutput).count == 1 && jsonArray(keysOutput).first?["active"] as? Bool == true)
            #expect(!keysOutput.contains(oldKey))

            // rotate-key: a new key printed once; the old one refused at once.
            let (rotated, rotateOutput) = try await runOffPool([
                "accounts", "rotate-key", id, "--storage", storage, "--json"
            ])
            #expect(rotated == 0, "\(rotateOutput)")
            let newKey = try #require(json(rotateOutput)["api_key"] as? String)
            let newKeyId = try #require(json(rotateOutput)["key_id"] as? String)
            #expect(json(rotateOutput)["revoked"] as? Int == 1)
            try await client.get("/api/v1/account", key: oldKey).expectProblem(.unauthorized, code: "revoked_api_key")
            #expect(try await client.get("/api/v1/account", key: newKey).status == .ok)

            // revoke-key: not the last active key; another one, yes.
            let (last, lastOutput) = try await runOffPool(["accounts", "revoke-key", id, newKeyId, "--storage", storage]
            )
            #expect(last != 0 && lastOutput.contains("last active key"), "\(lastOutput)")
            let created = try await client.executeRequest(
                uri: "/api/v1/account/keys", method: .post,
                headers: [.authorization: "Bearer \(newKey)"], body: nil
            ).json()
            let extraKey = try #require(created["api_key"] as? String)
            let extraId = try #require(created["id"] as? String)
            let (revoked, revokeOutput) = try await runOffPool([
                "accounts", "revoke-key", id, extraId, "--storage", storage
            ])
            #expect(revoked == 0, "\(revokeOutput)")
            try await client.get("/api/v1/account", key: extraKey).expectProblem(.unauthorized, code: "revoked_api_key")
            let (unknown, unknownOutput) = try await runOffPool([
                "accounts", "revoke-key", id, UUID().uuidString, "--storage", storage
            ])
            #expect(unknown != 0 && unknownOutput.contains("has no key"), "\(unknownOutput)")

            // disable / enable.
            #expect(try await runOffPool(["accounts", "disable", id, "--storage", storage]).0 == 0)
            try await client.get("/api/v1/account", key: newKey).expectProblem(.forbidden, code: "account_disabled")
            #expect(
                json(try await runOffPool(["accounts", "show", id, "--storage", storage, "--json"]).1)["disabled"]
                    as? Bool == true)
            #expect(try await runOffPool(["accounts", "enable", id, "--storage", storage]).0 == 0)
            #expect(try await client.get("/api/v1/account", key: newKey).status == .ok)

            // tester --on / --off.
            #expect(try await runOffPool(["accounts", "tester", id, "--on", "--storage", storage]).0 == 0)
            #expect(
                json(try await runOffPool(["accounts", "show", id, "--storage", storage, "--json"]).1)["tester"]
                    as? Bool == true)
            #expect(try await runOffPool(["accounts", "tester", id, "--off", "--storage", storage]).0 == 0)
            #expect(
                json(try await runOffPool(["accounts", "show", id, "--storage", storage, "--json"]).1)["tester"]
                    as? Bool == false)
            #expect(try await runOffPool(["accounts", "tester", id, "--storage", storage]).0 != 0)
        }
    }
}

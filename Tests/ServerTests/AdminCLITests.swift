import Foundation
import Testing

/// `moments accounts …` on a storage folder, as an operator runs it.
@Suite("Admin CLI")
struct AdminCLITests {
    func run(_ arguments: [String]) throws -> (Int32, String) {
        let executable = try #require(CrashRecoveryTests.executable, "build the moments executable first (swift build)")
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

        let (granted, grantOutput) = try run(["accounts", "grant-pro", id, "--until", "2099-01-31", "--storage", storage])
        #expect(granted == 0, "\(grantOutput)")
        let shown = json(try run(["accounts", "show", id, "--storage", storage, "--json"]).1)
        #expect(shown["plan"] as? String == "pro" && shown["entitlement_state"] as? String == "active")
        #expect(shown["expires_at"] as? String == "2099-01-31T00:00:00Z")

        #expect(try run(["accounts", "revoke", id, "--storage", storage]).0 == 0)
        let revoked = json(try run(["accounts", "show", id, "--storage", storage, "--json"]).1)
        #expect(revoked["plan"] as? String == "free" && revoked["entitlement_state"] as? String == "revoked")

        let (usageStatus, usage) = try run(["accounts", "usage", id, "--storage", storage])
        #expect(usageStatus == 0 && usage.contains("no usage yet"))
        let (missing, message) = try run(["accounts", "show", "00000000-0000-0000-0000-000000000000", "--storage", storage])
        #expect(missing != 0 && message.contains("no account"))
        let (badDate, dateMessage) = try run(["accounts", "grant-pro", id, "--until", "someday", "--storage", storage])
        #expect(badDate != 0 && dateMessage.contains("--until"))
    }
}

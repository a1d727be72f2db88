import Crypto
import Foundation
import HighlightJob
import HummingbirdTesting
@testable import Isolation
@testable import JobMedia
import MomentsConfig
import Store
import Testing

/// The sandbox's and the secrets' configuration keys, each read and each with its effect; and
/// what a local user who is not the server can read of its storage: nothing.
@Suite("Sandbox and secrets: keys and local readers", .onceAcrossEngines)
struct SandboxConfigTests {
    @Test func isolationKeysAreReadAndReachTheChildren() async throws {
        let reader = try await MomentsConfiguration.reader(
            environment: [
                "ISOLATION_CHILD_USERS": "61000-61009", "ISOLATION_ALLOW_WEAKER": "cgroup",
                "SECURITY_SERVER_SECRET": String(repeating: "s", count: 40)
            ], file: nil)
        let read = ServiceSettings(reader: reader)
        #expect(read.childUsers == "61000-61009")
        #expect(read.allowWeakerIsolation == ["cgroup"])
        #expect(read.serverSecret == String(repeating: "s", count: 40))

        let server = try await TestServer { s in
            s.childUsers = read.childUsers
            s.allowWeakerIsolation = read.allowWeakerIsolation
        }
        let isolation = server.service.runner.isolation
        #expect(isolation.childUsers == 61000...61009)
        #expect(isolation.allowWeaker == [.cgroup])
        #expect(isolation.viewRoot == server.layout.root, "children see only their own paths of the storage")
        // A range that is no range (or reaches into the system's uids) keeps the default.
        #expect(IsolationSettings.userRange("0-10") == nil && IsolationSettings.userRange("oops") == nil)
        #expect(IsolationSettings.userRange("70000-70001") == 70000...70001)
    }

    /// Where the user layer can be set up, the configured range is where a job's child runs.
    @Test(.enabled(if: IsolationLayer.user.unavailable == nil, "not root with the capabilities to change user"))
    func childRunsInTheConfiguredRange() async throws {
        let scratch = Scratch()
        let script = scratch.path("show-user")
        try "#!/bin/sh\necho \"uid=$(/usr/bin/id -u)\" >&2\nexit 9\n".write(
            toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        var settings = IsolationSettings(executable: script, memoryBytes: 1 << 30, niceness: 0)
        settings.childUsers = 61000...61009
        let outcome = await MediaChild.run(
            .probe("/nonexistent"), settings: settings, access: ChildAccess(), wallSeconds: 10, cpuSeconds: 10,
            cancellation: nil, logger: HostileChildTests.quiet)
        guard case .abnormal(let reason, _) = outcome else {
            Issue.record("expected the script's exit, got \(outcome)")
            return
        }
        let uid = reason.components(separatedBy: "uid=").last.flatMap { UInt32($0.prefix { $0.isNumber }) }
        #expect(uid.map { (61000...61009).contains($0) } == true, "\(reason)")
    }

    /// `security.serverSecret` is what links are signed with: a link made under it opens on a
    /// server configured with it (another API host of the same cluster), under another it does not.
    @Test func serverSecretSignsTheLinks() async throws {
        let shared = "one-secret-for-the-whole-cluster-" + UUID().uuidString
        let server = try await TestServer { s in s.serverSecret = shared }
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (accountId, key) = try await client.createAccount()
            let job = try await Self.completedJob(client, key: key, video: video)
            let stored = try #require(try await server.service.database.keys(accountId: accountId).first)
            let claims = MediaLinks.Claims(
                jobId: job, accountId: accountId, keyId: stored.id, file: "poster.jpg",
                expires: Int64(Date().timeIntervalSince1970) + 60)
            let same = MediaLinks.token(claims, keyHash: stored.hash, secret: ServerSecret(Data(shared.utf8)))
            #expect(try await client.get("/api/v1/media/\(same)", key: nil).status == .ok)
            let other = MediaLinks.token(
                claims, keyHash: stored.hash, secret: ServerSecret(Data("another-cluster-secret-0123456789ab".utf8)))
            try await client.get("/api/v1/media/\(other)", key: nil).expectProblem(
                .forbidden, code: "invalid_media_link")
        }
        #expect(throws: ServerSecret.Failure.self) { try ServerSecret.load(configured: "short", file: "/nonexistent") }
    }

    /// Without one configured, the secret is made on first start in the storage, 0600, and kept.
    @Test func serverSecretFileIsPrivateAndKept() throws {
        let scratch = Scratch()
        let path = scratch.path("server.secret")
        let first = try ServerSecret.load(configured: "", file: path)
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let again = try ServerSecret.load(configured: "", file: path)
        let sealed = first.seal("whsec_example", purpose: "webhook-secrets")
        #expect(ServerSecret.isSealed(sealed) && !sealed.contains("whsec_example"))
        #expect(again.open(sealed, purpose: "webhook-secrets") == "whsec_example")
        #expect(again.open(sealed, purpose: "media-links") == nil, "one purpose's key opens nothing of another's")
        #expect(ServerSecret(Data(repeating: 1, count: 32)).open(sealed, purpose: "webhook-secrets") == nil)
    }

    /// A local user who is not the server (nobody) reads neither the database (nor its -wal and
    /// -shm), nor a finished job's media, nor the server secret, whatever mode the storage has.
    @Test(.enabled(if: getuid() == 0, "needs root to act as nobody"), .timeLimit(.minutes(3)))
    func nobodyReadsNothingOfTheStorage() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let job = try await Self.completedJob(client, key: key, video: video)
            // The job's local files (an S3 engine keeps the media in the bucket, not here).
            let folder = server.layout.jobDirectory(job)
            let media = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).map { folder + "/" + $0 }
            let database = server.service.settings.storagePath + "/moments.sqlite"
            var files = media + [server.layout.path("server.secret")]
            if FileManager.default.fileExists(atPath: database) {
                files += [database, database + "-wal", database + "-shm"].filter {
                    FileManager.default.fileExists(atPath: $0)
                }
            }
            for mode in [0o700, 0o755] as [mode_t] {
                chmod(server.layout.root, mode)
                for file in files {
                    let read = Process()
                    read.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
                    read.arguments = [
                        "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                        "/bin/cat", file
                    ]
                    read.standardOutput = FileHandle.nullDevice
                    read.standardError = FileHandle.nullDevice
                    try read.run()
                    read.waitUntilExit()
                    #expect(read.terminationStatus != 0, "mode \(String(mode, radix: 8)): nobody read \(file)")
                }
            }
        }
    }

    static func completedJob(_ client: some TestClientProtocol, key: String, video: Data) async throws -> String {
        let upload = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
        let job = try #require(try upload.json()["job_id"] as? String, "\(upload.text)")
        let done = try await client.poll(job: job, key: key) {
            ["completed", "failed"].contains($0["status"] as? String)
        }
        #expect(done.last?["status"] as? String == "completed", "\(done.last ?? [:])")
        return job
    }
}

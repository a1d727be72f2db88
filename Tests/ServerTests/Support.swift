import Highlight
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobMedia
import Logging
import MediaSynth
import MomentsConfig
@testable import moments
import HTTPEdge
import MomentsServer
import NIOCore
import SQLiteStore
import Store
import Testing

/// A temporary directory removed when released.
final class Scratch: @unchecked Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("moments-server-\(UUID().uuidString)")
    init() { try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    var path: String { url.path }
}

/// Videos generated with the project's own encoder, once per build of the tests: the test processes
/// `make test` runs one after the other share them (a file's name is a digest of its spec and of
/// this test binary's build time; it is written under a private name and renamed into place).
enum Fixtures {
    static let directory: String = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("moments-server-fixtures").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }()

    /// The test binary's modification time: a rebuild (maybe of the encoder) makes new fixtures.
    static let build: String = {
        let binary =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let modified = (try? FileManager.default.attributesOfItem(atPath: binary))?[.modificationDate] as? Date
        return "\(modified?.timeIntervalSince1970 ?? 0)"
    }()

    /// 12 s, 320×180, lively and dull parts, with sound: a highlight takes a few seconds to make.
    static let short: String = make(
        "short.mp4", duration: 12, width: 320, height: 180,
        parts: [
            SynthPart(start: 0, kind: .lively, seed: 1), SynthPart(start: 4, kind: .dull, seed: 2),
            SynthPart(start: 8, kind: .lively, seed: 3)
        ])
    /// 36 s at 480×270: long enough to cancel or kill while it is being processed.
    static let long: String = make(
        "long.mp4", duration: 36, width: 480, height: 270,
        parts: (0..<9).map { SynthPart(start: Double($0 * 4), kind: $0 % 2 == 0 ? .lively : .dull, seed: $0 + 10) })
    /// 2 s at 160×90: a valid upload that costs little to receive and probe (quota races).
    static let tiny: String = make(
        "tiny.mp4", duration: 2, width: 160, height: 90, parts: [SynthPart(start: 0, kind: .lively, seed: 4)])
    /// 6 s of black: probes fine, but has no usable footage.
    static let black: String = make(
        "black.mp4", duration: 6, width: 320, height: 180, parts: [SynthPart(start: 0, kind: .black, seed: 0)])

    enum Name: Sendable { case short, long, black, tiny }

    /// The video's bytes. Generating (the first time) and reading happen on a thread of their own:
    /// on the cooperative pool they would starve the servers the tests talk to.
    static func data(_ name: Name) async throws -> Data {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try Data(contentsOf: URL(fileURLWithPath: path(name))) })
            }.start()
        }
    }

    static func path(_ name: Name) -> String {
        switch name {
        case .short: short
        case .long: long
        case .black: black
        case .tiny: tiny
        }
    }

    static func make(_ name: String, duration: Double, width: Int, height: Int, parts: [SynthPart]) -> String {
        var spec = SynthSpec()
        spec.width = width
        spec.height = height
        spec.duration = duration
        spec.barcode = false
        spec.parts = parts
        spec.beeps = stride(from: 1.0, to: duration, by: 3).map { $0 }
        // FNV-1a of the spec and the build: stable across processes (unlike `hashValue`).
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(spec)|\(build)".utf8 { digest = (digest ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let path = directory + "/" + String(digest, radix: 16) + "-" + name
        if FileManager.default.fileExists(atPath: path) { return path }
        let temporary = path + ".\(getpid()).tmp.mp4"
        try! Synth.write(spec, to: temporary)
        // Another test process may have put the same file in place meanwhile: either copy will do.
        if rename(temporary, path) != 0 { try? FileManager.default.removeItem(atPath: temporary) }
        return path
    }
}

/// A clock a test moves by hand (month boundaries).
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    init(_ date: Date) { current = date }
    var now: Date {
        get { lock.lock(); defer { lock.unlock() }; return current }
        set { lock.lock(); current = newValue; lock.unlock() }
    }
}

extension MediaDefaults {
    /// The media defaults of the service tests' servers: the shipped ones but for the face
    /// detector (off) and x264's fastest preset. Their synthetic videos show no one, and what
    /// these suites check (the API, the store, the sandbox, the storage) is the same either way;
    /// faces and the shipped preset are the media suites' (PeopleTests, RenderTests) and, through
    /// the API, the suites that ask for `.shipped`: the walk-through, people through the API
    /// and media config.
    static var shipped: MediaDefaults { MediaDefaults() }

    static var serviceTests: MediaDefaults {
        var media = MediaDefaults()
        media.template.analysis.faces.enabled = false
        media.template.preset = "ultrafast"
        return media
    }
}

/// A server on its own temporary storage.
struct TestServer {
    let scratch = Scratch()
    let service: MomentsServices
    let routes: RouteTable
    let app: any ApplicationProtocol

    init(
        plans: PlanSettings = TestServer.roomyPlans, appleChain: TestAppleChain? = nil, clock: TestClock? = nil,
        sandboxForAll: Bool = false, media: MediaDefaults = .serviceTests,
        _ configure: (inout ServiceSettings) -> Void = { _ in }
    ) async throws {
        var settings = ServiceSettings()
        settings.storagePath = scratch.path("storage")
        settings.port = 0
        settings.minFreeBytes = 1 << 20
        settings.progressIntervalMs = 50
        configure(&settings)
        var logger = Logger(label: "moments-test")
        logger.logLevel =
            ProcessInfo.processInfo.environment["MOMENTS_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            ?? .warning
        var appStore = AppStoreSettings()
        appStore.rootCertificates = [scratch.path("apple-root.cer")]
        appStore.sandboxForAll = sandboxForAll
        if let appleChain { try appleChain.write(rootTo: appStore.rootCertificates[0]) }
        let now: @Sendable () -> Date
        if let clock { now = { clock.now } } else { now = { Date() } }
        let engines = try await TestEngine.current.open(
            settings: &settings, sandboxForAll: sandboxForAll, logger: logger)
        service = try makeServices(
            settings: settings, media: media, plans: plans, appStore: appStore, store: engines.store,
            mediaStorage: engines.media, logger: logger, clock: now)
        let (app, routes) = buildApplication(service, logger: logger, background: service.background)
        self.app = app
        self.routes = routes
    }

    var layout: StorageLayout { service.layout }

    /// The service tests upload many videos from one account: their free plan has room
    /// (the plan tests use the real defaults).
    static var roomyPlans: PlanSettings {
        var plans = PlanSettings()
        plans.free.monthlyHighlights = nil
        plans.free.concurrentJobs = 20
        plans.free.maxUploadBytes = 4 << 30
        plans.free.maxDurationSeconds = 3600
        return plans
    }

    /// Files under uploads/ and jobs/ (what a refused upload must not leave behind).
    func storedFiles() -> [String] {
        var files: [String] = []
        for dir in [layout.uploadsDirectory, layout.jobsDirectory] {
            if let e = FileManager.default.enumerator(atPath: dir) {
                for case let name as String in e { files.append(dir + "/" + name) }
            }
        }
        return files
    }
}

/// Runs `test` against the server's application in the given mode.
func withServer<T: Sendable>(
    _ server: TestServer, _ setup: TestingSetup, _ test: @Sendable (any TestClientProtocol) async throws -> T
) async throws -> T {
    try await runTest(server.app, setup, test)
}

private func runTest<App: ApplicationProtocol, T: Sendable>(
    _ app: App, _ setup: TestingSetup,
    _ test: @Sendable (any TestClientProtocol) async throws -> T
) async throws -> T {
    try await app.test(setup) { client in try await test(client) }
}

struct Multipart {
    static let boundary = "MomentsTestBoundary7MA4YWxkTrZu0gW"

    /// A form: text fields, then an optional file part.
    static func body(fields: [(String, String)] = [], file: Data? = nil, fileField: String = "file") -> ByteBuffer {
        var out = Data()
        for (name, value) in fields {
            out.append(
                Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
        }
        if let file {
            out.append(
                Data(
                    "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(fileField)\"; filename=\"../../etc/passwd.mp4\"\r\nContent-Type: video/mp4\r\n\r\n"
                        .utf8))
            out.append(file)
            out.append(Data("\r\n".utf8))
        }
        out.append(Data("--\(boundary)--\r\n".utf8))
        return ByteBuffer(bytes: out)
    }

    static var contentType: String { "multipart/form-data; boundary=\(boundary)" }
}

extension TestClientProtocol {
    /// POST /api/v1/accounts → the API key.
    func createAccount() async throws -> (id: String, key: String) {
        let response = try await executeRequest(uri: "/api/v1/accounts", method: .post, headers: [:], body: nil)
        #expect(response.status == .created)
        let json = try response.json()
        return (json["account_id"] as! String, json["api_key"] as! String)
    }

    func upload(key: String, file: Data?, fields: [(String, String)] = [], headers extra: HTTPFields = [:]) async throws
        -> TestResponse
    {
        var headers: HTTPFields = [.authorization: "Bearer \(key)", .contentType: Multipart.contentType]
        headers.append(contentsOf: extra)
        return try await executeRequest(
            uri: "/api/v1/upload", method: .post, headers: headers, body: Multipart.body(fields: fields, file: file))
    }

    func get(_ uri: String, key: String?, method: HTTPRequest.Method = .get, headers extra: HTTPFields = [:])
        async throws -> TestResponse
    {
        var headers: HTTPFields = extra
        if let key { headers[.authorization] = "Bearer \(key)" }
        return try await executeRequest(uri: uri, method: method, headers: headers, body: nil)
    }

    /// Polls the status until `done` holds (or the deadline passes); returns every status seen.
    func poll(job: String, key: String, timeout: Double = 120, until done: ([String: Any]) -> Bool) async throws
        -> [[String: Any]]
    {
        var seen: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let status = try await get("/api/v1/jobs/\(job)/status", key: key).json()
            seen.append(status)
            if done(status) { return seen }
            try await Task.sleep(for: .milliseconds(200))
        }
        Issue.record("job \(job) did not reach the expected state in \(timeout) s; last: \(seen.last ?? [:])")
        return seen
    }
}

extension TestResponse {
    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView))
        return object as? [String: Any] ?? [:]
    }

    var text: String { String(buffer: body) }

    /// Asserts an RFC 9457 problem with this status (and code, when given).
    @discardableResult
    func expectProblem(
        _ status: HTTPResponse.Status, code: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        #expect(self.status == status, "\(text)", sourceLocation: sourceLocation)
        #expect(headers[.contentType] == "application/problem+json", sourceLocation: sourceLocation)
        let json = try json()
        #expect(json["status"] as? Int == Int(status.code), sourceLocation: sourceLocation)
        #expect((json["title"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(((json["detail"] as? String)?.count ?? 0) > 10, sourceLocation: sourceLocation)
        if let code {
            #expect((json["type"] as? String)?.hasSuffix("/" + code) == true, "\(json)", sourceLocation: sourceLocation)
        }
        return json
    }
}

/// A body a client sees names no file, folder or FFmpeg internals.
func expectNoInternals(_ text: String, server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) {
    for leak in [server.scratch.path, server.layout.root, "/tmp/", "file:", "avformat", "avcodec", ".partial", "/input"]
    {
        #expect(!text.contains(leak), "the response reveals \(leak): \(text)", sourceLocation: sourceLocation)
    }
}

/// The service's parts as `moments serve` builds them; the embedded SQLite store under the
/// storage folder when `store` is nil.
func makeServices(
    settings: ServiceSettings, media: MediaDefaults, plans: PlanSettings = PlanSettings(),
    appStore: AppStoreSettings = AppStoreSettings(), store: (any MomentsStore)? = nil,
    mediaStorage: (any MediaStorage)? = nil, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }
) throws -> MomentsServices {
    let database: any MomentsStore
    if let store {
        database = store
    } else {
        let path = StorageLayout(root: settings.storagePath).databasePath
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        database = try AppDatabase(path: path, sandboxForAll: appStore.sandboxForAll)
    }
    let services = try MomentsServices(
        settings: settings, media: media, plans: plans, appStore: appStore, store: database,
        mediaStorage: mediaStorage, logger: logger, clock: clock)
    // The start-up work at once (folders, lock, recovery), as the tests expect of a built service;
    // the group's start-up service then finds it done.
    try services.startup.perform()
    return services
}

/// What the tests ask of a running service, in the words they were written in.
extension MomentsServices {
    var database: any MomentsStore { store }

    func createAccount(label: String?) async throws -> (Account, String) {
        try await accounts.createAccount(label: label)
    }

    func account(apiKey: String) async throws -> Account? { try await accounts.account(apiKey: apiKey) }

    func cancelOrDelete(id: String, account: Account) async throws -> Job? {
        try await jobs.cancelOrDelete(id: id, account: account)
    }

    func sweepNow(orphanGraceSeconds: TimeInterval? = nil) async {
        await jobs.sweepNow(orphanGraceSeconds: orphanGraceSeconds)
    }
}

/// Waits for a state rather than for a guessed time: checks `condition` every 20 ms until it
/// holds or `seconds` pass; whether it held.
func eventually(within seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if try await condition() { return true }
        if Date() >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}

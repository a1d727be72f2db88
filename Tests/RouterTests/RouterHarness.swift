import Highlight
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobMedia
import Logging
import MomentsConfig
@testable import moments
import HTTPEdge
import MomentsServer
import NIOCore
import Requests
import SQLiteStore
import Store
import Testing
import Uploads

/// The router tier: the real controllers, middleware and domain services on a throw-away SQLite
/// store, with the upload probe answered from memory and no workers, driven with `.router` (no
/// socket, no child process, no media): each test runs in milliseconds.
struct RouterHarness {
    let root: String
    let services: MomentsServices
    let app: Application<RouterResponder<AppRequestContext>>

    init(
        plans: PlanSettings = PlanSettings(), probe: StubProbe = StubProbe(),
        _ configure: (inout ServiceSettings) -> Void = { _ in }
    ) throws {
        root = NSTemporaryDirectory() + "moments-router-" + UUID().uuidString
        var settings = ServiceSettings()
        settings.storagePath = root
        settings.workers = 0
        settings.minFreeBytes = 1
        configure(&settings)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        // The store in memory: the router tier needs its behaviour, not its file.
        let store = try AppDatabase.inMemory()
        var logger = Logger(label: "moments-router-test")
        logger.logLevel = .critical
        services = try MomentsServices(
            settings: settings, media: MediaDefaults(), plans: plans, store: store, probe: probe, logger: logger)
        try services.startup.perform()
        app = Application(router: buildRouter(services, logger: logger).0)
    }

    /// Runs `test` against the router, then removes the storage folder.
    func run(_ test: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await app.test(.router, test)
    }

    /// Files left under the uploads and jobs folders.
    func storedFiles() -> [String] {
        let layout = services.layout
        return [layout.uploadsDirectory, layout.jobsDirectory].flatMap { dir in
            (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String] ?? []).map { dir + "/" + $0 }
        }.filter { !$0.hasSuffix("/") && !isDirectory($0) }
    }

    private func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}

/// The probe's answer for every upload: a 60 s 1080p H.264 video, or a refusal.
struct StubProbe: UploadProbe {
    var refusal: Refusal?
    var duration = 60.0

    func inspect(_ path: String) async throws(Refusal) -> JobInput {
        if let refusal { throw refusal }
        let size = Int64((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        return JobInput(
            size: size, duration: duration, container: "mov,mp4,m4a,3gp,3g2,mj2", videoCodec: "h264",
            audioCodec: "aac", width: 1920, height: 1080, rotation: 0, frameRate: 30)
    }
}

extension TestClientProtocol {
    func send(
        _ method: HTTPRequest.Method, _ uri: String, key: String? = nil, headers: HTTPFields = [:],
        body: ByteBuffer? = nil
    ) async throws -> TestResponse {
        var all = headers
        if let key { all[.authorization] = "Bearer \(key)" }
        return try await executeRequest(uri: uri, method: method, headers: all, body: body)
    }

    /// A new account's id and API key.
    func account() async throws -> (id: String, key: String) {
        let response = try await send(.post, "/api/v1/accounts")
        #expect(response.status == .created)
        let json = try response.object()
        return (try #require(json["account_id"] as? String), try #require(json["api_key"] as? String))
    }

    /// POST /api/v1/upload with `bytes` as the file part and `fields` before it.
    func upload(key: String, bytes: Int = 4096, fields: [(String, String)] = []) async throws -> TestResponse {
        let boundary = "RouterTierBoundary"
        var body = ""
        for (name, value) in fields {
            body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
        }
        body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"clip.mp4\"\r\n"
        body += "Content-Type: video/mp4\r\n\r\n" + String(repeating: "v", count: bytes) + "\r\n--\(boundary)--\r\n"
        return try await send(
            .post, "/api/v1/upload", key: key,
            headers: [.contentType: "multipart/form-data; boundary=\(boundary)"], body: ByteBuffer(string: body))
    }
}

extension TestResponse {
    func object() throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any], "\(String(buffer: body))")
    }

    /// Asserts a problem+json answer with `status` and `code`; its members.
    @discardableResult
    func problem(
        _ status: HTTPResponse.Status, _ code: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        #expect(self.status == status, "\(String(buffer: body))", sourceLocation: sourceLocation)
        #expect(headers[.contentType] == "application/problem+json", sourceLocation: sourceLocation)
        let json = try object()
        #expect((json["type"] as? String)?.hasSuffix("/" + code) == true, "\(json)", sourceLocation: sourceLocation)
        #expect(((json["detail"] as? String)?.count ?? 0) > 10, sourceLocation: sourceLocation)
        return json
    }
}

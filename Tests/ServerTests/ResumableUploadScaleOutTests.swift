import Highlight
import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobMedia
import Logging
import MomentsConfig
@testable import moments
import MomentsServer
import NIOCore
import NIOHTTP1
import PostgresStore
import Store
import Testing

/// Two API hosts on one PostgreSQL database and one bucket: an upload begun on one host is
/// finished on the other (the bytes recorded on the first are fetched from the bucket's parts).
@Suite(
    "Resumable uploads across API hosts",
    .enabled(if: !TestEngine.isEmbedded, "needs the shared engines (MOMENTS_TEST_ENGINE=postgresql+s3)"))
struct ResumableUploadScaleOutTests {
    @Test func uploadBegunOnOneHostFinishesOnAnother() async throws {
        let hostA = try await ResumableUploadTests.queueOnlyServer()
        var settings = hostA.service.settings
        let scratch = Scratch()
        settings.storagePath = scratch.path("host-b")
        var logger = Logger(label: "moments-test-b")
        logger.logLevel = .warning
        let s3 = try TestServers.s3
        let store = try await PostgresStore.started(url: settings.databaseURL, logger: logger)
        let media = try MediaStorageFactory.make(
            settings: settings, layout: StorageLayout(root: settings.storagePath),
            environment: ["AWS_ACCESS_KEY_ID": s3.accessKey, "AWS_SECRET_ACCESS_KEY": s3.secretKey], logger: logger)
        let serviceB = try makeServices(
            settings: settings, media: MediaDefaults(), plans: TestServer.roomyPlans, store: store,
            mediaStorage: media, logger: logger)
        let (appB, _) = buildApplication(serviceB, logger: logger, background: serviceB.background)
        let video = try await Fixtures.data(.short)
        try await withServer(hostA, .live) { clientA in
            let wireA = try Wire(clientA)
            let (_, key) = try await clientA.createAccount()
            let tus = ResumableUploadTests.tusHeaders
            let created = try await wireA.send(
                .POST, "/api/v1/uploads", key: key, headers: tus + [("Upload-Length", String(video.count))])
            let location = try #require(created.header("Location"))
            let half = video.count / 2
            let first = try await wireA.send(
                .PATCH, location, key: key,
                headers: tus + [
                    ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", "0")
                ], body: video.prefix(half))
            #expect(first.status == 204)
            try await appB.test(.live) { clientB in
                let wireB = try Wire(clientB)
                let head = try await wireB.send(.HEAD, location, key: key, headers: tus)
                #expect(head.header("Upload-Offset") == String(half))
                let rest = try await wireB.send(
                    .PATCH, location, key: key,
                    headers: tus + [
                        ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", String(half))
                    ], body: video.suffix(from: half))
                #expect(rest.status == 204, "\(rest.text)")
                let job = try #require(rest.header("Moments-Job-Id"))
                #expect(try await ResumableUploadTests.storedInput(hostA, job: job) == video)
            }
        }
        try await store.close()
    }
}

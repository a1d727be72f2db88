import Foundation
import HTTPTypes
import HummingbirdTesting
import Crypto
@testable import JobMedia
import Store
import Testing

/// Signed media links (what the studio's <video> and <img> use): they open one file of one job
/// without the key, with byte ranges, until they expire or their key is revoked; nothing else.
@Suite("Signed media links", .serialized)
struct MediaLinkTests {
    @Test func linksOpenTheirFileOnly() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (accountId, key) = try await client.createAccount()
            let upload = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            let job = try #require(try upload.json()["job_id"] as? String)
            // Before the highlight exists there is nothing to link to.
            try await client.get("/api/v1/jobs/\(job)/media-links", key: key).expectProblem(
                .conflict, code: "job_not_completed")
            let done = try await client.poll(job: job, key: key) {
                ["completed", "failed"].contains($0["status"] as? String)
            }
            #expect(done.last?["status"] as? String == "completed")

            let links = try await client.get("/api/v1/jobs/\(job)/media-links", key: key).json()
            let path = { (name: String) in try #require(URL(string: links[name] as? String ?? "")).path }
            let highlight = try path("highlight")
            #expect(highlight.hasPrefix("/api/v1/media/"))
            let whole = try await client.get(highlight, key: nil)
            #expect(whole.status == .ok && whole.headers[.contentType] == "video/mp4")
            let part = try await client.get(highlight, key: nil, headers: [.range: "bytes=0-99"])
            #expect(part.status == .partialContent && part.body.readableBytes == 100)
            let poster = try await client.get(try path("poster"), key: nil)
            #expect(poster.status == .ok && poster.headers[.contentType] == "image/jpeg")
            #expect(try await client.get(try path("storyboard"), key: nil).headers[.contentType] == "image/png")

            // Another account cannot ask for links to this job.
            let (_, other) = try await client.createAccount()
            try await client.get("/api/v1/jobs/\(job)/media-links", key: other).expectProblem(.notFound)

            // A forged signature, a payload pointing elsewhere, garbage and an expired link open nothing.
            let token = String(highlight.dropFirst("/api/v1/media/".count))
            let forged = String(token.dropLast(2)) + (token.hasSuffix("AA") ? "BB" : "AA")
            try await client.get("/api/v1/media/\(forged)", key: nil).expectProblem(
                .forbidden, code: "invalid_media_link")
            let keys = try await server.service.database.keys(accountId: accountId)
            let stored = try #require(keys.first)
            let wrongHash = MediaLinks.token(
                .init(
                    jobId: job, accountId: accountId, keyId: stored.id, file: "highlight.mp4",
                    expires: Int64(Date().timeIntervalSince1970) + 60), keyHash: String(repeating: "0", count: 64),
                secret: server.service.serverSecret)
            try await client.get("/api/v1/media/\(wrongHash)", key: nil).expectProblem(
                .forbidden, code: "invalid_media_link")
            // Whoever has a copy of the database (the key's stored hash) but not the server secret
            // forges nothing: signed with the hash alone (the scheme before the server secret), or
            // under any other secret.
            let claims = MediaLinks.Claims(
                jobId: job, accountId: accountId, keyId: stored.id, file: "highlight.mp4",
                expires: Int64(Date().timeIntervalSince1970) + 60)
            let payload = Data(
                ["v1", job, accountId, stored.id, "highlight.mp4", String(claims.expires)].joined(separator: "|").utf8)
            let hashOnly = HMAC<SHA256>.authenticationCode(
                for: payload, using: SymmetricKey(data: Data(stored.hash.utf8)))
            let fromDatabase = MediaLinks.base64url(payload) + "." + MediaLinks.base64url(Data(hashOnly))
            let otherSecret = MediaLinks.token(
                claims, keyHash: stored.hash, secret: ServerSecret(Data(repeating: 7, count: 32)))
            for forgedLink in [fromDatabase, otherSecret] {
                try await client.get("/api/v1/media/\(forgedLink)", key: nil).expectProblem(
                    .forbidden, code: "invalid_media_link")
            }
            #expect(
                try await client.get(
                    "/api/v1/media/\(MediaLinks.token(claims, keyHash: stored.hash, secret: server.service.serverSecret))",
                    key: nil
                ).status == .ok, "the same claims signed as the server signs open the file")
            try await client.get("/api/v1/media/\(String(repeating: "A", count: 2000))", key: nil).expectProblem(
                .forbidden, code: "invalid_media_link")
            let expired = MediaLinks.token(
                .init(
                    jobId: job, accountId: accountId, keyId: stored.id, file: "highlight.mp4",
                    expires: Int64(Date().timeIntervalSince1970) - 1), keyHash: stored.hash,
                secret: server.service.serverSecret)
            try await client.get("/api/v1/media/\(expired)", key: nil).expectProblem(
                .forbidden, code: "media_link_expired")

            // Links made with a key stop working when that key is revoked.
            let second = try await client.executeRequest(
                uri: "/api/v1/account/keys", method: .post,
                headers: [.authorization: "Bearer \(key)"], body: nil
            ).json()
            let secondKey = try #require(second["api_key"] as? String)
            let secondLinks = try await client.get("/api/v1/jobs/\(job)/media-links", key: secondKey).json()
            let secondPoster = try #require(URL(string: secondLinks["poster"] as? String ?? "")).path
            #expect(try await client.get(secondPoster, key: nil).status == .ok)
            let secondId = try #require(second["id"] as? String)
            let revoke = try await client.get("/api/v1/account/keys/\(secondId)", key: key, method: .delete)
            #expect(revoke.status == .ok)
            try await client.get(secondPoster, key: nil).expectProblem(.forbidden, code: "invalid_media_link")

            // Deleting the job's media ends its links too.
            #expect(try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete).status == .ok)
            try await client.get(highlight, key: nil).expectProblem(.gone, code: "media_deleted")
        }
    }
}

import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import JobMedia
import Store
import Workers
import Wording

/// Signed media links: `GET /api/v1/jobs/{id}/media-links` (with the key) answers links to the
/// completed job's highlight, poster and storyboard that work without the key for an hour;
/// `GET|HEAD /api/v1/media/{token}` serves the file a link names (byte ranges, as the download).
/// What a `<video>` or `<img>` element needs: it cannot send the Authorization header.
struct MediaLinksController {
    let jobs: JobControl
    let links: MediaLinkSigner
    let baseURL: String
    let files = MediaResponder()

    struct LinksView: ResponseEncodable {
        var highlight: String
        var poster: String
        var storyboard: String
        /// A quality=original highlight's H.264 preview, once it is ready.
        var preview: String?
        var expiresAt: Date
        enum CodingKeys: String, CodingKey { case highlight, poster, storyboard, preview, expiresAt = "expires_at" }
    }

    func addRoutes(to router: Router<AppRequestContext>, protected: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/api/v1/jobs/:id/media-links", on: protected, use: links)
        table.add(.get, "/api/v1/media/:token", on: router, use: media)
        table.add(.head, "/api/v1/media/:token", on: router, use: media)
    }

    @Sendable func links(_ request: Request, context: AppRequestContext) async throws -> LinksView {
        let account = try context.requireAccount()
        let job = try await jobs.ownedJob(context)
        guard job.status == .completed, job.mediaDeletedAt == nil else { throw JobMediaState.unavailable(job) }
        guard let keyId = context.apiKeyId,
            let (tokens, expires) = try await links.mediaLinks(job: job, account: account, keyId: keyId)
        else {
            throw APIKeyMiddleware.unauthorized(
                "revoked_api_key", Say.revokedAPIKeyForLinks)
        }
        let base = baseURL
        let url = { (file: String) in "\(base)/api/v1/media/\(tokens[file] ?? "")" }
        return LinksView(
            highlight: url("highlight.mp4"), poster: url("poster.jpg"), storyboard: url("storyboard.png"),
            preview: JobPreviewView.state(job) == "ready" ? url("preview.mp4") : nil, expiresAt: expires)
    }

    @Sendable func media(_ request: Request, context: AppRequestContext) async throws -> Response {
        let token = try context.parameters.require("token")
        let (job, file): (Job, MediaFile)
        switch try await links.mediaLink(Substring(token)) {
        case .success(let opened): (job, file) = opened
        case .failure(.expired):
            throw Problem(
                .forbidden, code: "media_link_expired",
                detail: Say.mediaLinkExpired)
        case .failure(.invalid):
            throw Problem(
                .forbidden, code: "invalid_media_link",
                detail:
                    Say.mediaLinkInvalid
            )
        }
        guard let download = try await Problem.storageCall({ try await jobs.media(job, file) }) else {
            if job.status != .completed || job.mediaDeletedAt != nil { throw JobMediaState.unavailable(job) }
            if file == .preview { throw JobPreviewView.missing(job) }
            throw Problem(.notFound, code: "no_storyboard", detail: Say.noStoryboard)
        }
        switch file {
        case .poster:
            return try await files.respond(
                request, context: context, download: download, contentType: "image/jpeg",
                disposition: "inline; filename=\"highlight_\(job.id).jpg\"")
        case .storyboard:
            return try await files.respond(
                request, context: context, download: download, contentType: "image/png",
                disposition: "inline; filename=\"storyboard_\(job.id).png\"")
        default:
            return try await files.respond(
                request, context: context, download: download, contentType: "video/mp4",
                disposition: "attachment; filename=\"highlight_\(job.id).mp4\"")
        }
    }
}

import Accounts
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import MomentsConfig
import NIOCore
import Requests
import Store
import Telemetry
import Uploads
import Wording

/// PATCH: bytes appended at the upload's offset (tus 1.0 and the IETF draft), the connection's
/// stall and rate limits applied, the key checked again while they arrive, and the complete file
/// turned into a job.
extension ResumableUploadController {
    @Sendable func patch(_ request: Request, context: AppRequestContext) async throws -> Response {
        var proto = ResumableProtocol.of(request.headers)
        do {
            let account = try context.requireAccount()
            let id = try Self.id(context)
            let headers = request.headers
            if proto == .plain {
                // No protocol header: the upload's own protocol decides how the append reads.
                guard let upload = try await resumable.upload(id: id, account: account) else {
                    throw ResumableUploads.notFoundProblem
                }
                proto = upload.flavor == "tus" ? .tus : .ietf(version: 6)
                if proto == .tus { try Self.checkTusVersion(headers) }
            }
            guard let offset = try Self.size(headers[.uploadOffset], "Upload-Offset") else {
                throw Problem.badRequest(
                    "missing_upload_offset",
                    Say.appendNeedsOffset)
            }
            var append = ResumableUploads.Append(
                offset: offset, contentLength: try Self.size(headers[.contentLength], "Content-Length"))
            switch proto {
            case .tus:
                try Self.checkTusVersion(headers)
                guard headers[.contentType]?.lowercased() == "application/offset+octet-stream" else {
                    throw Problem(
                        .unsupportedMediaType, code: "invalid_content_type",
                        detail: Say.tusAppendContentType)
                }
                append.length = try Self.size(headers[.uploadLength], "Upload-Length")
                append.checksum = try ResumableProtocol.tusChecksum(headers[.uploadChecksum])
            case .ietf(let version):
                // Versions 3-6: an append without the flag is the last one; 7+: the flag is required.
                guard
                    let completes = ResumableProtocol.ietfComplete(headers, version: version)
                        ?? (version <= 6 ? true : nil)
                else {
                    throw Problem.badRequest(
                        "missing_upload_complete", Say.appendNeedsComplete
                    )
                }
                append.completes = completes
                append.length = try Self.size(headers[.uploadLength], "Upload-Length")
                if append.completes, append.length == nil, let contentLength = append.contentLength {
                    append.length = offset + contentLength
                }
            case .plain:
                break
            }
            let outcome = try await appending(id, append, request: request, context: context)
            let maxBytes = await planMaxBytes(account, for: proto)
            switch outcome {
            case .partial(let upload):
                var fields: HTTPFields = [.uploadOffset: String(upload.offset)]
                fields.append(contentsOf: protocolFields(upload, proto: proto, maxBytes: maxBytes))
                return Response(status: .noContent, headers: fields)
            case .completed(let upload, let job, let usage):
                if proto == .tus {
                    // tus acknowledges every append with 204; the job is in Moments-Job-Id (and in
                    // GET /api/v1/uploads/{id}).
                    var fields: HTTPFields = [.uploadOffset: String(upload.offset), .momentsJobId: job.id]
                    fields.append(contentsOf: protocolFields(upload, proto: proto, maxBytes: maxBytes))
                    return Response(status: .noContent, headers: fields)
                }
                var response = try jobResponse(
                    job, usage: usage, bytes: upload.offset, request: request, context: context)
                response.headers[.uploadOffset] = String(upload.offset)
                response.headers.append(contentsOf: protocolFields(upload, proto: proto, maxBytes: maxBytes))
                return response
            }
        } catch {
            throw Self.problem(error, proto: proto)
        }
    }

    /// Runs an append with the server-wide upload cap and the disk floor of a plain upload.
    func appending(_ id: String, _ append: ResumableUploads.Append, request: Request, context: AppRequestContext)
        async throws -> ResumableUploads.Outcome
    {
        let account = try context.requireAccount()
        let ticket = uploads.beginAppend(account: account.id)
        defer { uploads.end(ticket) }
        try uploads.startReceiving(
            ticket, declaredBytes: append.contentLength ?? 0, logger: context.logger, resumable: true)
        try intake.checkDiskSpace(
            expectedBytes: (append.contentLength ?? 0) + uploads.outstandingBytes(excluding: ticket))
        context.inviteBody()
        let channel = context.channel
        // A key revoked (or an account disabled) while the body arrives ends the append within a
        // few seconds; the bytes already received are kept for the account.
        let logger = context.logger
        let watch = APIKeyMiddleware.watchKey(of: request, accounts: accounts) {
            logger.info("append stopped: its API key no longer works")
            channel.close(promise: nil)
        }
        defer { watch.cancel() }
        return try await resumable.append(
            id: id, account: account, append, body: request.body,
            tooLarge: { plan in
                intake.policy.fileTooLarge(limit: resumable.maxBytes(plan), plan: plan)
            }, stop: { channel.close(promise: nil) },
            wrote: { written in
                uploads.wrote(ticket, bytes: written)
                try intake.checkDiskSpace(expectedBytes: uploads.outstandingBytes())
            })
    }
}

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

/// Resumable uploads at `/api/v1/uploads`: tus 1.0 (core, creation, creation-with-upload,
/// creation-defer-length, termination, expiration, checksum, OPTIONS discovery) and the IETF
/// draft "Resumable Uploads for HTTP" that iOS URLSession speaks (interop versions 3–8: 104 Upload
/// Resumption Supported, Upload-Complete / Upload-Incomplete, Upload-Offset), on one resource
/// `/api/v1/uploads/{id}`. A creating POST that speaks neither is a plain upload of the raw body.
/// When the last byte arrives the file becomes a job exactly as `POST /api/v1/upload` makes one.
struct ResumableUploadController {
    let intake: UploadIntake
    let accounts: AccountService
    let settings: ServiceSettings
    let uploads: UploadRegistry
    let resumable: ResumableUploads

    func addRoutes(to router: Router<AppRequestContext>, protected: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.options, "/api/v1/uploads", on: router, use: options)
        table.add(.post, "/api/v1/uploads", on: protected, use: create)
        table.add(.head, "/api/v1/uploads/:id", on: protected, use: head)
        table.add(.patch, "/api/v1/uploads/:id", on: protected, use: patch)
        table.add(.delete, "/api/v1/uploads/:id", on: protected, use: delete)
        table.add(.get, "/api/v1/uploads/:id", on: protected, use: show)
    }

    // MARK: Discovery

    @Sendable func options(_ request: Request, context: AppRequestContext) async throws -> Response {
        Response(
            status: .noContent,
            headers: [
                .tusResumable: ResumableProtocol.tusVersion, .tusVersion: ResumableProtocol.tusVersion,
                .tusExtension: ResumableProtocol.tusExtensions, .tusMaxSize: String(settings.maxUploadBytes),
                .tusChecksumAlgorithm: ResumableProtocol.checksumAlgorithms,
                // The IETF draft's discovery (versions 6+).
                .acceptPatch: "application/partial-upload, application/offset+octet-stream",
                .uploadLimit: "max-size=\(settings.maxUploadBytes)"
            ])
    }

    // MARK: Creation

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> Response {
        let proto = ResumableProtocol.of(request.headers)
        do {
            let response = try await creating(request, context: context, proto: proto)
            UploadMetrics.accepted()
            return response
        } catch {
            let problem = Self.problem(error, proto: proto)
            UploadMetrics.refused(code: (problem as? Problem)?.code ?? "error")
            throw problem
        }
    }

    func creating(_ request: Request, context: AppRequestContext, proto: ResumableProtocol) async throws -> Response {
        let account = try context.requireAccount()
        let maxBytes = await planMaxBytes(account, for: proto)
        let terms = try Self.creationTerms(request, proto: proto)
        if terms.length == 0 || (terms.completes && !terms.body) {
            throw Problem.badRequest("empty_file", Say.emptyUpload)
        }
        let options = try HighlightOptions.parse(fields: terms.fields, limits: settings.highlightLimits)
        let creation = ResumableUploads.Creation(
            flavor: proto == .tus ? "tus" : "ietf", length: terms.length,
            filename: terms.filename, targetDuration: options.targetDuration,
            quality: options.quality, edit: options.edit)
        let (upload, _) = try await resumable.create(creation, account: account) { plan in
            intake.policy.fileTooLarge(limit: resumable.maxBytes(plan), plan: plan)
        }
        context.logger.info("resumable upload created", metadata: ["upload": "\(upload.id)", "protocol": "\(proto)"])
        // Relative (RFC 9110 §10.2.2): right behind any proxy or host name the client used.
        let location = "/api/v1/uploads/\(upload.id)"
        if case .ietf(let version) = proto {
            // Before any byte is read: the client now knows where to resume if the connection drops.
            var fields: HTTPFields = [.location: location, .uploadDraftInteropVersion: String(version)]
            if let limit = uploadLimit(upload, version: version, maxBytes: maxBytes) { fields[.uploadLimit] = limit }
            let informational = HTTPResponse(
                status: .init(code: 104, reasonPhrase: "Upload Resumption Supported"),
                headerFields: fields)
            context.sendInformational(informational)
        }
        guard terms.body else {
            var fields: HTTPFields = [.location: location, .uploadOffset: "0"]
            fields.append(contentsOf: protocolFields(upload, proto: proto, maxBytes: maxBytes))
            return Response(status: .created, headers: fields)
        }
        let append = ResumableUploads.Append(
            offset: 0, length: nil, completes: terms.completes, checksum: nil,
            contentLength: terms.contentLength)
        let outcome = try await appending(upload.id, append, request: request, context: context)
        return try created(
            outcome, location: location, proto: proto, maxBytes: maxBytes, request: request, context: context)
    }

    /// What a creating request declares in its protocol's headers.
    struct CreationTerms {
        var length: Int64?
        var fields: [String: String] = [:]
        var filename: String?
        var contentLength: Int64?
        /// The request carries bytes of the upload.
        var body: Bool
        /// The request carries the last byte of the upload.
        var completes = false
    }

    static func creationTerms(_ request: Request, proto: ResumableProtocol) throws -> CreationTerms {
        let headers = request.headers
        let contentLength = try Self.size(headers[.contentLength], "Content-Length")
        var terms = CreationTerms(
            contentLength: contentLength,
            body: contentLength.map { $0 > 0 } ?? (headers[.transferEncoding] != nil))
        switch proto {
        case .tus:
            try Self.checkTusVersion(headers)
            if headers[.uploadDeferLength] != nil {
                guard headers[.uploadDeferLength] == "1", headers[.uploadLength] == nil else {
                    throw Problem.badRequest(
                        "invalid_upload_length", Say.lengthOrDefer)
                }
            } else {
                guard let declared = try Self.size(headers[.uploadLength], "Upload-Length") else {
                    throw Problem.badRequest(
                        "missing_upload_length", Say.tusNeedsLength)
                }
                terms.length = declared
            }
            guard let metadata = ResumableProtocol.tusMetadata(headers[.uploadMetadata]) else {
                throw Problem.badRequest(
                    "invalid_metadata",
                    Say.invalidMetadata)
            }
            terms.fields = metadata
            terms.filename = metadata["filename"]
            // creation-with-upload: data only with its content type (anything else is no data).
            terms.body = terms.body && headers[.contentType]?.lowercased() == "application/offset+octet-stream"
        case .ietf(let version):
            terms.fields = Self.queryFields(request)
            terms.completes = ResumableProtocol.ietfComplete(headers, version: version) ?? true
            if let declared = try Self.size(headers[.uploadLength], "Upload-Length") { terms.length = declared }
            if terms.completes, let contentLength {
                if let declared = terms.length, declared != contentLength {
                    throw Problem.badRequest(
                        "length_mismatch",
                        Say.lengthDiffersFromBody(declared: declared, contentLength: contentLength)
                    )
                }
                terms.length = contentLength
            }
        case .plain:
            // A raw body, the whole file (an IETF client of a version we do not know lands here).
            terms.fields = Self.queryFields(request)
            terms.completes = true
            terms.length = contentLength
            terms.body = true
        }
        return terms
    }

    /// The answer to a creation that carried bytes: the upload's offset, and the job when they completed it.
    func created(
        _ outcome: ResumableUploads.Outcome, location: String, proto: ResumableProtocol, maxBytes: Int64,
        request: Request, context: AppRequestContext
    ) throws -> Response {
        switch outcome {
        case .partial(let upload):
            var fields: HTTPFields = [.location: location, .uploadOffset: String(upload.offset)]
            fields.append(contentsOf: protocolFields(upload, proto: proto, maxBytes: maxBytes))
            return Response(status: .created, headers: fields)
        case .completed(let upload, let job, let usage):
            var response = try jobResponse(job, usage: usage, bytes: upload.offset, request: request, context: context)
            response.status = .created
            response.headers[.location] = location
            response.headers[.uploadOffset] = String(upload.offset)
            response.headers.append(contentsOf: protocolFields(upload, proto: proto, maxBytes: maxBytes))
            return response
        }
    }

    // MARK: Offset

    @Sendable func head(_ request: Request, context: AppRequestContext) async throws -> Response {
        let proto = ResumableProtocol.of(request.headers)
        do {
            let account = try context.requireAccount()
            if proto == .tus { try Self.checkTusVersion(request.headers) }
            guard let upload = try await resumable.settledUpload(id: try Self.id(context), account: account) else {
                throw ResumableUploads.notFoundProblem
            }
            if upload.state == .terminated || upload.state == .expired {
                throw Self.problem(Refusal.uploadGone, proto: proto)
            }
            var fields: HTTPFields = [.uploadOffset: String(upload.offset), .cacheControl: "no-store"]
            let answered = proto == .plain ? ResumableProtocol.ietf(version: 6) : proto
            fields.append(
                contentsOf: protocolFields(upload, proto: answered, maxBytes: await planMaxBytes(account, for: answered)))
            if proto == .tus {
                fields[.uploadMetadata] = ResumableProtocol.tusMetadataHeader([
                    ("filename", upload.filename), ("target_duration", String(upload.targetDuration)),
                    ("quality", upload.quality.rawValue)
                ])
            }
            if let job = upload.jobId { fields[.momentsJobId] = job }
            return Response(status: proto == .tus ? .ok : .noContent, headers: fields)
        } catch {
            throw Self.problem(error, proto: proto)
        }
    }

    // MARK: Termination, state

    @Sendable func delete(_ request: Request, context: AppRequestContext) async throws -> Response {
        let proto = ResumableProtocol.of(request.headers)
        do {
            let account = try context.requireAccount()
            if proto == .tus { try Self.checkTusVersion(request.headers) }
            guard try await resumable.terminate(id: try Self.id(context), account: account) != nil else {
                throw ResumableUploads.notFoundProblem
            }
            return Response(
                status: .noContent, headers: proto == .tus ? [.tusResumable: ResumableProtocol.tusVersion] : [:])
        } catch {
            throw Self.problem(error, proto: proto)
        }
    }

    struct UploadView: ResponseEncodable {
        var id: String
        var offset: Int64
        var length: Int64?
        var complete: Bool
        var state: String
        var jobId: String?
        var statusUrl: String?
        var expiresAt: Date?
        var createdAt: Date
        var error: ErrorView?
        struct ErrorView: Codable { var code: String; var message: String }
        enum CodingKeys: String, CodingKey {
            case id, offset, length, complete, state, jobId = "job_id", statusUrl = "status_url", expiresAt =
                "expires_at"
            case createdAt = "created_at", error
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id); try c.encode(offset, forKey: .offset); try c.encode(length, forKey: .length)
            try c.encode(complete, forKey: .complete); try c.encode(state, forKey: .state);
            try c.encode(jobId, forKey: .jobId)
            try c.encodeIfPresent(statusUrl, forKey: .statusUrl); try c.encodeIfPresent(expiresAt, forKey: .expiresAt)
            try c.encode(createdAt, forKey: .createdAt); try c.encodeIfPresent(error, forKey: .error)
        }
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> UploadView {
        let account = try context.requireAccount()
        let id = try Self.id(context)
        guard let upload = try await resumable.upload(id: id, account: account) else {
            throw ResumableUploads.notFoundProblem
        }
        let base = settings.baseURL
        return UploadView(
            id: upload.id, offset: upload.offset, length: upload.length,
            complete: upload.isComplete || upload.state == .completed,
            state: upload.state.rawValue, jobId: upload.jobId,
            statusUrl: upload.jobId.map { "\(base)/api/v1/jobs/\($0)/status" },
            expiresAt: upload.state == .receiving ? upload.expiresAt : nil, createdAt: upload.createdAt,
            error: upload.errorCode.map { UploadView.ErrorView(code: $0, message: upload.errorMessage ?? "") })
    }

    // MARK: Helpers

    /// The plain upload's answer (job id, links, quota) for the request that delivered the last byte.
    func jobResponse(
        _ job: Job, usage: QuotaUsage, bytes: Int64, request: Request, context: AppRequestContext
    ) throws -> Response {
        let base = settings.baseURL
        let body = UploadResponse(
            jobId: job.id,
            message:
                Say.uploadReceived(bytes: bytes, seconds: job.input.duration, estimate: job.estimatedSeconds),
            estimatedTime: job.estimatedSeconds, statusUrl: "\(base)/api/v1/jobs/\(job.id)/status",
            links: JobLinks(job, baseURL: base), quota: QuotaView(usage))
        var response = try context.responseEncoder.encode(body, from: request, context: context)
        response.headers[.momentsJobId] = job.id
        return response
    }

    /// Headers every response about an upload carries in its protocol; `maxBytes` is the largest
    /// upload the caller's plan takes (`planMaxBytes`).
    func protocolFields(_ upload: ResumableUpload, proto: ResumableProtocol, maxBytes: Int64) -> HTTPFields {
        var fields: HTTPFields = [:]
        switch proto {
        case .tus:
            fields[.tusResumable] = ResumableProtocol.tusVersion
            if let length = upload.length {
                fields[.uploadLength] = String(length)
            } else {
                fields[.uploadDeferLength] = "1"
            }
            if upload.state == .receiving { fields[.uploadExpires] = ResumableProtocol.httpDate(upload.expiresAt) }
        case .ietf(let version):
            let (name, value) = ResumableProtocol.ietfCompleteField(
                upload.state == .completed || upload.isComplete, version: version)
            fields[name] = value
            fields[.uploadDraftInteropVersion] = String(version)
            if version >= 6, let length = upload.length { fields[.uploadLength] = String(length) }
            if let limit = uploadLimit(upload, version: version, maxBytes: maxBytes) { fields[.uploadLimit] = limit }
        case .plain:
            break
        }
        return fields
    }

    /// The largest upload `account`'s plan takes, within the server's limit (the server's alone
    /// when the plan cannot be read now: the creation and the end of the upload check it again).
    /// Only the draft's `Upload-Limit` (versions 6+) says it, so no other answer reads the plan.
    func planMaxBytes(_ account: Account, for proto: ResumableProtocol) async -> Int64 {
        guard case .ietf(let version) = proto, version >= 6 else { return settings.maxUploadBytes }
        guard let plan = try? await intake.policy.accountPlan(account) else { return settings.maxUploadBytes }
        return resumable.maxBytes(plan)
    }

    /// The draft's `Upload-Limit` (versions 6+): the largest upload (`maxBytes`), and how long this
    /// one stays without a new byte (`expires` in version 6, `max-age` after).
    func uploadLimit(_ upload: ResumableUpload, version: Int, maxBytes: Int64) -> String? {
        guard version >= 6 else { return nil }
        var limit = "max-size=\(maxBytes)"
        if upload.state == .receiving {
            let seconds = max(0, Int(upload.expiresAt.timeIntervalSince(intake.policy.clock()).rounded(.down)))
            limit += version == 6 ? ", expires=\(seconds)" : ", max-age=\(seconds)"
        }
        return limit
    }

    static func checkTusVersion(_ headers: HTTPFields) throws {
        guard headers[.tusResumable] == ResumableProtocol.tusVersion else {
            throw Problem(
                .preconditionFailed, code: "unsupported_tus_version",
                detail:
                    Say.tusVersion(ResumableProtocol.tusVersion),
                headers: [.tusVersion: ResumableProtocol.tusVersion])
        }
    }

    static func id(_ context: AppRequestContext) throws -> String {
        let id = try context.parameters.require("id")
        guard id.utf8.count <= 64, id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || $0 == 45 })
        else {
            throw ResumableUploads.notFoundProblem
        }
        return id
    }

    static func size(_ text: String?, _ name: String) throws -> Int64? {
        guard let value = ResumableProtocol.size(text) else {
            throw Problem.badRequest("invalid_header", Say.notAByteCount(name))
        }
        return value
    }

    /// target_duration, quality, aspect, focus, include and exclude from the query (IETF and plain creation).
    static func queryFields(_ request: Request) -> [String: String] {
        var fields: [String: String] = [:]
        for name in ["target_duration", "quality", "aspect", "focus", "include", "exclude"] {
            if let value = request.uri.queryParameters.get(name) { fields[name] = value }
        }
        return fields
    }

    /// Every refusal as a problem, with the headers its protocol's clients read: tus's
    /// Tus-Resumable, and the upload's offset on a 409 (both protocols) and a 460.
    static func problem(_ error: any Error, proto: ResumableProtocol) -> any Error {
        var problem: Problem
        switch error {
        case let refusal as Refusal:
            problem = Problem(refusal)
            if case .int(let offset)? = refusal.extras["offset"] { problem.headers[.uploadOffset] = String(offset) }
        case let p as Problem:
            problem = p
        default:
            return error
        }
        if proto == .tus { problem.headers[.tusResumable] = ResumableProtocol.tusVersion }
        // The draft answers an append to a completed upload with 400 (completed-upload).
        if proto.isIETF && problem.code == "upload_complete" {
            problem.status = .badRequest; problem.title = "Bad Request"
        }
        return problem
    }
}

extension ResumableUploads {
    static let notFoundProblem = Problem(
        .notFound, code: "upload_not_found", title: Say.Title.uploadNotFound,
        detail: Say.uploadNotFound)
}

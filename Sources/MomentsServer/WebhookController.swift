import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Store
import Webhooks
import Workers
import Wording

/// The account's webhook endpoint (register or rotate with PUT, read, remove) and a job's
/// delivery log.
struct WebhookController {
    let jobs: JobControl
    let endpoints: any WebhookRepository
    let webhooks: WebhookDispatcher
    let clock: @Sendable () -> Date

    func addRoutes(to group: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.put, "/api/v1/account/webhook", on: group, use: register)
        table.add(.get, "/api/v1/account/webhook", on: group, use: show)
        table.add(.delete, "/api/v1/account/webhook", on: group, use: remove)
        table.add(.get, "/api/v1/jobs/:id/webhooks", on: group, use: deliveries)
    }

    /// PUT /api/v1/account/webhook {"url"}: registers the endpoint (or changes its URL) with a new
    /// signing secret, shown only in this answer; PUT again to rotate the secret.
    @Sendable func register(_ request: Request, context: AppRequestContext) async throws -> WebhookCreatedView {
        let account = try context.requireAccount()
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else {
            throw Problem.badRequest(
                "invalid_json",
                Say.webhookBodyNotAnObject)
        }
        if let unknown = object.keys.sorted().first(where: { $0 != "url" }) {
            throw Problem.badRequest("unknown_field", Say.unknownField(unknown, accepted: Say.webhookFields))
        }
        guard let url = object["url"] as? String, !url.isEmpty else {
            throw Problem.badRequest(
                "invalid_webhook_url", Say.webhookURLMissing)
        }
        // The dispatcher's checker: registration and deliveries share the lookup budget, and
        // this account's lookups count against its own share only. A lookup waits at most the
        // budget's deadline, and stops (freeing its slot) when the client goes away.
        let checker = webhooks.targets
        let accountId = account.id
        do {
            _ = try await context.cancelledIfClientLeaves { try await checker.check(url, account: accountId) }
        } catch let error as WebhookTargetRefusal {
            if error.code == "webhook_lookup_busy" {
                throw Problem(.serviceUnavailable, code: error.code, detail: error.detail, headers: [.retryAfter: "5"])
            }
            throw Problem.badRequest(error.code, error.detail)
        }
        // Stored sealed under the server secret: a copy of the database alone signs nothing.
        let secret = WebhookEndpoint.newSecret()
        let endpoint = try await endpoints.setWebhookEndpoint(
            accountId: account.id, url: url,
            secret: webhooks.secret.seal(secret, purpose: WebhookDispatcher.secretPurpose), now: clock())
        return WebhookCreatedView(
            url: endpoint.url, secret: secret, createdAt: endpoint.createdAt, rotatedAt: endpoint.rotatedAt,
            message:
                Say.webhookSecretShownOnce
        )
    }

    /// GET /api/v1/account/webhook: the endpoint, without its secret.
    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> WebhookView {
        let account = try context.requireAccount()
        guard let endpoint = try await endpoints.webhookEndpoint(accountId: account.id) else {
            throw Self.noEndpoint
        }
        return WebhookView(url: endpoint.url, createdAt: endpoint.createdAt, rotatedAt: endpoint.rotatedAt)
    }

    /// DELETE /api/v1/account/webhook: no more deliveries (those still pending are given up).
    @Sendable func remove(_ request: Request, context: AppRequestContext) async throws -> Response {
        let account = try context.requireAccount()
        guard try await endpoints.deleteWebhookEndpoint(accountId: account.id) else { throw Self.noEndpoint }
        return Response(status: .noContent)
    }

    /// GET /api/v1/jobs/{id}/webhooks: the job's deliveries and every attempt of each.
    @Sendable func deliveries(_ request: Request, context: AppRequestContext) async throws -> WebhookDeliveriesView {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        guard try await jobs.job(id: id, account: account) != nil else { throw Problem.jobNotFound(id) }
        let log = try await endpoints.webhookDeliveries(jobId: id, accountId: account.id)
        return WebhookDeliveriesView(
            jobId: id, deliveries: log.map { WebhookDeliveriesView.Delivery($0.delivery, attempts: $0.attempts) })
    }

    static let noEndpoint = Problem(
        .notFound, code: "webhook_not_found", title: Say.Title.noWebhook,
        detail:
            Say.noWebhook
    )
}

struct WebhookCreatedView: ResponseEncodable {
    var url: String
    var secret: String
    var createdAt: Date
    var rotatedAt: Date?
    var message: String

    enum CodingKeys: String, CodingKey { case url, secret, createdAt = "created_at", rotatedAt = "rotated_at", message }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(url, forKey: .url)
        try c.encode(secret, forKey: .secret)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(rotatedAt, forKey: .rotatedAt)
        try c.encode(message, forKey: .message)
    }
}

struct WebhookView: ResponseEncodable {
    var url: String
    var createdAt: Date
    var rotatedAt: Date?

    enum CodingKeys: String, CodingKey { case url, createdAt = "created_at", rotatedAt = "rotated_at" }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(url, forKey: .url)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(rotatedAt, forKey: .rotatedAt)
    }
}

struct WebhookDeliveriesView: ResponseEncodable {
    struct Attempt: Encodable {
        var number: Int
        var at: Date
        var statusCode: Int?
        var error: String?
        var durationMs: Int

        enum CodingKeys: String, CodingKey {
            case number, at, statusCode = "status_code", error, durationMs = "duration_ms"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(number, forKey: .number)
            try c.encode(at, forKey: .at)
            try c.encode(statusCode, forKey: .statusCode)
            try c.encode(error, forKey: .error)
            try c.encode(durationMs, forKey: .durationMs)
        }
    }

    struct Delivery: Encodable {
        var id: String
        var type: String
        var status: String
        var createdAt: Date
        var deliveredAt: Date?
        var nextAttemptAt: Date?
        var attempts: [Attempt]

        enum CodingKeys: String, CodingKey {
            case id, type, status, createdAt = "created_at", deliveredAt = "delivered_at", nextAttemptAt =
                "next_attempt_at", attempts
        }

        init(_ delivery: WebhookDelivery, attempts: [WebhookAttempt]) {
            id = delivery.id
            type = delivery.eventType.rawValue
            status = delivery.status.rawValue
            createdAt = delivery.createdAt
            deliveredAt = delivery.deliveredAt
            nextAttemptAt = delivery.nextAttemptAt
            self.attempts = attempts.map {
                Attempt(
                    number: $0.number, at: $0.at, statusCode: $0.statusCode, error: $0.error, durationMs: $0.durationMs)
            }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(type, forKey: .type)
            try c.encode(status, forKey: .status)
            try c.encode(createdAt, forKey: .createdAt)
            try c.encode(deliveredAt, forKey: .deliveredAt)
            try c.encode(nextAttemptAt, forKey: .nextAttemptAt)
            try c.encode(attempts, forKey: .attempts)
        }
    }

    var jobId: String
    var deliveries: [Delivery]

    enum CodingKeys: String, CodingKey { case jobId = "job_id", deliveries }
}

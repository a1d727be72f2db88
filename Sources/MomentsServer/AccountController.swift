import Accounts
import AppStore
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Store
import Wording

/// GET /api/v1/account: plan, entitlement, this month's usage and the plan's limits; and the
/// account's API keys: create one, list them, revoke one.
struct AccountController {
    let policy: PlanPolicy
    let keys: any KeyRepository

    func addRoutes(to group: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/api/v1/account", on: group, use: show)
        table.add(.get, "/api/v1/account/keys", on: group, use: listKeys)
        table.add(.post, "/api/v1/account/keys", on: group, use: createKey)
        table.add(.delete, "/api/v1/account/keys/:id", on: group, use: revokeKey)
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> AccountView {
        let account = try context.requireAccount()
        return AccountView(account, try await policy.accountPlan(account), proProduct: policy.plans.proProductId)
    }

    /// GET /api/v1/account/keys: every key, active and revoked, without secrets.
    @Sendable func listKeys(_ request: Request, context: AppRequestContext) async throws -> KeyListView {
        let account = try context.requireAccount()
        let keys = try await keys.keys(accountId: account.id)
        return KeyListView(keys: keys.map { KeyView($0, current: $0.id == context.apiKeyId) })
    }

    /// POST /api/v1/account/keys {label?}: a new key, shown this once.
    @Sendable func createKey(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<
        KeyCreatedView
    > {
        let account = try context.requireAccount()
        var label: String?
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        if body.readableBytes > 0 {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            else {
                throw Problem.badRequest(
                    "invalid_json", Say.labelBodyNotAnObject(example: "my laptop"))
            }
            if let unknown = object.keys.first(where: { $0 != "label" }) {
                throw Problem.badRequest("unknown_field", Say.unknownField(unknown, accepted: Say.keyFields))
            }
            if let value = object["label"] {
                guard let text = value as? String, text.count <= 100 else {
                    throw Problem.badRequest("invalid_field", Say.invalidLabel)
                }
                label = text
            }
        }
        switch try await keys.createKey(accountId: account.id, label: label, now: policy.clock()) {
        case .success(let (key, secret)):
            return EditedResponse(
                status: .created,
                response: KeyCreatedView(
                    id: key.id, apiKey: secret, prefix: key.prefix, label: key.label, createdAt: key.createdAt,
                    message: Say.keyShownOnce)
            )
        case .failure(.tooManyKeys(let limit)):
            throw Problem(
                .conflict, code: "too_many_keys",
                detail:
                    Say.tooManyKeys(limit: limit),
                extensions: ["limit": .int(limit)])
        case .failure:
            throw Problem(.notFound, code: "account_not_found", detail: Say.accountGone)
        }
    }

    /// DELETE /api/v1/account/keys/{id}: revokes the key; it stops working on the next request.
    @Sendable func revokeKey(_ request: Request, context: AppRequestContext) async throws -> KeyView {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        switch try await keys.revokeKey(id: id.lowercased(), accountId: account.id, now: policy.clock()) {
        case .success(let key):
            return KeyView(key, current: key.id == context.apiKeyId)
        case .failure(.lastActiveKey):
            throw Problem(
                .conflict, code: "last_active_key",
                detail:
                    Say.lastActiveKey
            )
        case .failure:
            throw Problem(
                .notFound, code: "key_not_found", title: Say.Title.keyNotFound,
                detail: Say.keyNotFound(id))
        }
    }
}

/// An API key as its owner sees it: never the secret, only its first characters.
struct KeyView: ResponseEncodable {
    var id: String
    var prefix: String
    var label: String?
    var createdAt: Date
    var lastUsedAt: Date?
    var revokedAt: Date?
    /// The key this request was made with.
    var current: Bool

    init(_ key: APIKey, current: Bool) {
        id = key.id; prefix = key.prefix; label = key.label; createdAt = key.createdAt
        lastUsedAt = key.lastUsedAt; revokedAt = key.revokedAt; self.current = current
    }

    enum CodingKeys: String, CodingKey {
        case id, prefix, label, createdAt = "created_at", lastUsedAt = "last_used_at", revokedAt = "revoked_at", current
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(prefix, forKey: .prefix)
        try c.encode(label, forKey: .label)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(lastUsedAt, forKey: .lastUsedAt)
        try c.encode(revokedAt, forKey: .revokedAt)
        try c.encode(current, forKey: .current)
    }
}

struct KeyListView: ResponseEncodable {
    var keys: [KeyView]
}

struct KeyCreatedView: ResponseEncodable {
    var id: String
    var apiKey: String
    var prefix: String
    var label: String?
    var createdAt: Date
    var message: String

    enum CodingKeys: String, CodingKey { case id, apiKey = "api_key", prefix, label, createdAt = "created_at", message }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(apiKey, forKey: .apiKey)
        try c.encode(prefix, forKey: .prefix)
        try c.encode(label, forKey: .label)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(message, forKey: .message)
    }
}

struct AccountView: ResponseEncodable {
    struct EntitlementView: Codable {
        var productId: String
        var expiresAt: Date?
        var state: EntitlementState
        var source: String
        enum CodingKeys: String, CodingKey { case productId = "product_id", expiresAt = "expires_at", state, source }
    }
    struct Limits: Codable {
        var monthlyHighlights: Int?
        var maxUploadBytes: Int64
        var maxDurationSeconds: Double
        var maxOutputSide: Int
        var concurrentJobs: Int
        var retentionDays: Double
        /// Re-cuts allowed (each counts as a highlight); uploads kept for them.
        var recuts: Bool
        /// quality=original allowed (the source's own pictures, copied).
        var original: Bool
        enum CodingKeys: String, CodingKey {
            case monthlyHighlights = "monthly_highlights", maxUploadBytes = "max_upload_bytes"
            case maxDurationSeconds = "max_duration_seconds", maxOutputSide = "max_output_side"
            case concurrentJobs = "concurrent_jobs", retentionDays = "retention_days", recuts, original
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(monthlyHighlights, forKey: .monthlyHighlights)
            try c.encode(maxUploadBytes, forKey: .maxUploadBytes)
            try c.encode(maxDurationSeconds, forKey: .maxDurationSeconds)
            try c.encode(maxOutputSide, forKey: .maxOutputSide)
            try c.encode(concurrentJobs, forKey: .concurrentJobs)
            try c.encode(retentionDays, forKey: .retentionDays)
            try c.encode(recuts, forKey: .recuts)
            try c.encode(original, forKey: .original)
        }
    }

    var accountId: String
    var label: String?
    var createdAt: Date
    var plan: String
    var entitlement: EntitlementView?
    var usage: QuotaView
    var limits: Limits
    /// The product that lifts the limits (free plan only).
    var upgradeProductId: String?

    enum CodingKeys: String, CodingKey {
        case accountId = "account_id", label, createdAt = "created_at", plan, entitlement, usage, limits
        case upgradeProductId = "upgrade_product_id"
    }

    init(_ account: Account, _ current: AccountPlan, proProduct: String) {
        accountId = account.id
        label = account.label
        createdAt = account.createdAt
        plan = current.plan.name
        if let sub = current.entitlement.subscription, let state = current.entitlement.state {
            entitlement = EntitlementView(
                productId: sub.productId, expiresAt: current.entitlement.expiresAt, state: state, source: sub.source)
        }
        usage = QuotaView(current.usage)
        let p = current.plan
        limits = Limits(
            monthlyHighlights: p.monthlyHighlights, maxUploadBytes: p.maxUploadBytes,
            maxDurationSeconds: p.maxDurationSeconds,
            maxOutputSide: p.maxOutputSide, concurrentJobs: p.concurrentJobs, retentionDays: p.retentionDays,
            recuts: p.recuts, original: p.original)
        upgradeProductId = current.upgrade == nil ? nil : proProduct
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(accountId, forKey: .accountId)
        try c.encodeIfPresent(label, forKey: .label)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(plan, forKey: .plan)
        try c.encode(entitlement, forKey: .entitlement)
        try c.encode(usage, forKey: .usage)
        try c.encode(limits, forKey: .limits)
        try c.encode(upgradeProductId, forKey: .upgradeProductId)
    }
}

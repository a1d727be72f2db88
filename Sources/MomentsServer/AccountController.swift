import AppStore
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs

/// GET /api/v1/account: plan, entitlement, this month's usage and the plan's limits.
struct AccountController {
    let service: JobService

    func addRoutes(to group: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/api/v1/account", on: group, use: show)
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> AccountView {
        let account = try context.requireAccount()
        return AccountView(account, try await service.accountPlan(account), proProduct: service.plans.proProductId)
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
        enum CodingKeys: String, CodingKey {
            case monthlyHighlights = "monthly_highlights", maxUploadBytes = "max_upload_bytes"
            case maxDurationSeconds = "max_duration_seconds", maxOutputSide = "max_output_side"
            case concurrentJobs = "concurrent_jobs", retentionDays = "retention_days"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(monthlyHighlights, forKey: .monthlyHighlights)
            try c.encode(maxUploadBytes, forKey: .maxUploadBytes)
            try c.encode(maxDurationSeconds, forKey: .maxDurationSeconds)
            try c.encode(maxOutputSide, forKey: .maxOutputSide)
            try c.encode(concurrentJobs, forKey: .concurrentJobs)
            try c.encode(retentionDays, forKey: .retentionDays)
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

    init(_ account: Account, _ current: JobService.AccountPlan, proProduct: String) {
        accountId = account.id
        label = account.label
        createdAt = account.createdAt
        plan = current.plan.name
        if let sub = current.entitlement.subscription, let state = current.entitlement.state {
            entitlement = EntitlementView(productId: sub.productId, expiresAt: current.entitlement.expiresAt, state: state, source: sub.source)
        }
        usage = QuotaView(current.usage)
        let p = current.plan
        limits = Limits(monthlyHighlights: p.monthlyHighlights, maxUploadBytes: p.maxUploadBytes, maxDurationSeconds: p.maxDurationSeconds,
                        maxOutputSide: p.maxOutputSide, concurrentJobs: p.concurrentJobs, retentionDays: p.retentionDays)
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

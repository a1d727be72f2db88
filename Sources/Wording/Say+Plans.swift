import Foundation

/// The plan's limits: the month's highlights, jobs at once, the day's worker time, original
/// quality, file size and length, re-cuts.
extension Say {
    public static func quotaExceeded(used: Int, limit: Int, plan: String, resetsAt: Date, upgradeProduct: String?) -> String {
        var detail =
            "You have made \(used) of your \(limit) \(plan) highlights this month. "
            + "The count resets on \(timestamp(resetsAt))"
        if let product = upgradeProduct {
            detail += "; subscribe to \(product) for unlimited highlights."
        } else {
            detail += " (the fair-use limit of the \(plan) plan)."
        }
        return detail
    }

    public static func tooManyJobs(limit: Int, active: Int, uploading: Int, retryAfter: Int, product: String, upgradeJobs: Int?) -> String {
        let busy = active + uploading
        let counting = uploading > 0 ? " (counting uploads still being received)" : ""
        let upgrade = upgradeJobs.map { ", or subscribe to \(product) to run \($0) at once" } ?? ""
        let hint = uploading > 0 ? unfinishedUploadHint : ""
        let verb = busy == 1 ? "is" : "are"
        return "Your plan runs \(count(limit, "job")) at a time and \(busy) \(verb) "
            + "still in progress\(counting). Try again in about \(retryAfter) s\(upgrade).\(hint)"
    }

    /// What frees a place an unfinished upload holds.
    static let unfinishedUploadHint =
        " An upload keeps its place while it is received; an unfinished resumable "
        + "upload until it completes, is cancelled (DELETE its upload URL), expires, or receives "
        + "nothing for the plan's idle time."

    public static func dailyBudgetExceeded(limitSeconds: Double, plan: String, resetsAt: Date, upgradeProduct: String?) -> String {
        var detail =
            "Your \(plan) plan's processing time for today (\(Int(limitSeconds / 60)) minutes) "
            + "is used up; it renews at \(timestamp(resetsAt))."
        if let product = upgradeProduct { detail += " Subscribe to \(product) for more." }
        return detail
    }

    public static func originalQualityNotInPlan(plan: String, upgradeProduct: String?) -> String {
        "Original quality (your video's own picture, copied without re-encoding) is not part of the \(plan) plan."
            + (upgradeProduct.map { " Subscribe to \($0) to get it, or" } ?? "") + " choose quality high."
    }

    public static func fileTooLarge(limitBytes: Int64, plan: String, upgrade: (product: String, maxBytes: Int64)?) -> String {
        let detail = "The file is larger than the \(plan) plan accepts (\(limitBytes / 1_000_000) MB)."
        guard let upgrade else { return detail + " Upload a shorter or smaller video." }
        return detail + " Upload a shorter or smaller video, or subscribe to \(upgrade.product) for files up to "
            + "\(upgrade.maxBytes / 1_000_000) MB."
    }

    public static func tooLongForServer(duration: Double, limit: Double) -> String {
        String(
            format: "The video is %.0f s long; this server accepts videos up to %.0f s. Trim it and upload again.",
            duration, limit)
    }

    public static func tooLongForPlan(duration: Double, limitSeconds: Double, plan: String, upgrade: (product: String, limitSeconds: Double)?) -> String {
        let detail = String(
            format: "The video is %.0f s long; the %@ plan accepts videos up to %.0f s.", duration, plan, limitSeconds)
        guard let upgrade else { return detail + " Trim it and upload again." }
        return detail + " Trim it, or subscribe to \(upgrade.product) for up to \(Int(upgrade.limitSeconds / 60)) minutes."
    }

    public static func originalBeyondPlan(duration: Double, bytes: Int64, plan: String, limitSeconds: Double, limitBytes: Int64) -> String {
        String(
            format: "The original video (%.0f s, %lld MB) is beyond what the %@ plan accepts now (%.0f s, %lld MB).",
            duration, bytes / 1_000_000, plan, limitSeconds, limitBytes / 1_000_000)
    }

    public static func recutsNotAllowed(plan: String) -> String {
        "The \(plan) plan does not include re-cuts. Upload the video again with the new settings."
    }
}

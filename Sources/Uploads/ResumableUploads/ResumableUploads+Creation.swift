import Accounts
import Foundation
import MediaVocabulary
import Requests
import Store

extension ResumableUploads {
    public struct Creation: Sendable {
        public var flavor: String
        public var length: Int64?
        public var filename: String?
        public var targetDuration: Int
        public var quality: HighlightQuality
        /// Shape, pinned and excluded moments (checked against the video when the last byte is in).
        public var edit = EditRequest()

        public init(
            flavor: String, length: Int64?, filename: String?, targetDuration: Int, quality: HighlightQuality,
            edit: EditRequest = EditRequest()
        ) {
            self.flavor = flavor; self.length = length; self.filename = filename; self.targetDuration = targetDuration;
            self.quality = quality
            self.edit = edit
        }
    }

    /// The largest file the account may upload now (server and plan).
    public func maxBytes(_ plan: AccountPlan) -> Int64 {
        min(intake.settings.maxUploadBytes, plan.plan.maxUploadBytes)
    }

    /// Creates an upload after the checks of a plain upload: quota, jobs at once counting the
    /// account's uploads still receiving, daily budget, the declared length against the plan (via
    /// `tooLarge`) and the disk.
    public func create(_ creation: Creation, account: Account, tooLarge: (AccountPlan) -> Error) async throws
        -> (ResumableUpload, AccountPlan)
    {
        let plan = try await intake.policy.precheck(account)
        try intake.policy.check(quality: creation.quality, plan: plan)
        if let length = creation.length {
            if length > maxBytes(plan) { throw tooLarge(plan) }
            try intake.checkDiskSpace(expectedBytes: length)
        }
        let now = self.now
        var upload = ResumableUpload(
            id: UUID().uuidString.lowercased(), accountId: account.id, flavor: creation.flavor,
            length: creation.length, filename: creation.filename, targetDuration: creation.targetDuration,
            quality: creation.quality, now: now, expiresAt: now.addingTimeInterval(expirySeconds))
        if creation.edit != EditRequest() { upload.edit = creation.edit.job(sourceName: nil, keepsInput: false) }
        try await staging.prepare(id: upload.id, offset: 0)
        do {
            // The plan's checks again, in the transaction that inserts the row: parallel
            // creations of one account cannot all pass the check above.
            upload = try await intake.createAdmitted(upload, account: account, plan: plan)
        } catch {
            await staging.remove(id: upload.id)
            throw error
        }
        return (upload, plan)
    }
}

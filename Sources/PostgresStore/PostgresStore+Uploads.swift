import MediaVocabulary
import Foundation
import Store
import PostgresNIO

/// Resumable uploads (AppDatabase's ResumableUpload.swift): the hold is taken by one conditional
/// UPDATE, so two API hosts appending to one upload at once cannot both win.
extension PostgresStore {
    static let uploadColumns = #"""
        id, "accountId", flavor, length, "offset", filename, "targetDuration", quality, state, "jobId", "errorCode",
        "errorMessage", "createdAt", "updatedAt", "expiresAt", holder, "heldUntil", edit::text AS edit
        """#

    static func upload(_ row: PostgresRow) throws -> ResumableUpload {
        let r = row.makeRandomAccess()
        guard let state = ResumableUploadState(rawValue: try r["state"].decode(String.self)) else {
            throw PostgresStoreError.corrupt("an upload row has an unknown state")
        }
        let storedQuality = try r["quality"].decode(String.self)
        guard let quality = HighlightQuality(rawValue: storedQuality) else {
            throw PostgresStoreError.corrupt("an upload row has an unknown quality")
        }
        var upload = ResumableUpload(
            id: try r["id"].decode(String.self), accountId: try r["accountId"].decode(String.self),
            flavor: try r["flavor"].decode(String.self), length: try r["length"].decode(Int64?.self),
            filename: try r["filename"].decode(String?.self), targetDuration: try r["targetDuration"].decode(Int.self),
            quality: quality, now: try r["createdAt"].decode(Date.self),
            expiresAt: try r["expiresAt"].decode(Date.self))
        upload.offset = try r["offset"].decode(Int64.self)
        upload.state = state
        upload.jobId = try r["jobId"].decode(String?.self)
        upload.errorCode = try r["errorCode"].decode(String?.self)
        upload.errorMessage = try r["errorMessage"].decode(String?.self)
        upload.updatedAt = try r["updatedAt"].decode(Date.self)
        upload.holder = try r["holder"].decode(String?.self)
        upload.heldUntil = try r["heldUntil"].decode(Date?.self)
        upload.edit = try Rows.value(JobEdit.self, json: try r["edit"].decode(String?.self))
        return upload
    }

    public func createUpload(_ u: ResumableUpload) async throws {
        try await execute(
            """
            INSERT INTO resumable_upload (id, "accountId", flavor, length, "offset", filename, "targetDuration", quality, state,
                "createdAt", "updatedAt", "expiresAt", edit)
            VALUES (\(u.id), \(u.accountId), \(u.flavor), \(u.length), \(u.offset), \(u.filename), \(u.targetDuration), \(u.quality.rawValue),
                \(u.state.rawValue), \(u.createdAt), \(u.updatedAt), \(u.expiresAt), \(try Rows.json(u.edit))::jsonb)
            """)
    }

    public func upload(id: String, accountId: String) async throws -> ResumableUpload? {
        try await rows(
            "SELECT \(unescaped: Self.uploadColumns) FROM resumable_upload WHERE id = \(id) AND \"accountId\" = \(accountId)"
        )
        .first.map(Self.upload)
    }

    public func upload(id: String) async throws -> ResumableUpload? {
        try await rows("SELECT \(unescaped: Self.uploadColumns) FROM resumable_upload WHERE id = \(id)").first.map(
            Self.upload)
    }

    public func holdUpload(id: String, accountId: String, holder: String, until: Date, now: Date) async throws
        -> UploadHold
    {
        try await transaction { connection in
            guard
                var upload = try await connection.rows(
                    """
                    SELECT \(unescaped: Self.uploadColumns) FROM resumable_upload WHERE id = \(id) AND "accountId" = \(accountId) FOR UPDATE
                    """, logger: logger
                ).first.map(Self.upload)
            else { return .missing }
            guard upload.state == .receiving else { return .held(upload) }
            if upload.holder != nil, let held = upload.heldUntil, held > now { return .busy(upload) }
            if upload.expiresAt < now {
                // Past its expiry and not yet swept: it stays dead (an append must not revive it).
                try await connection.run(
                    """
                    UPDATE resumable_upload SET state = 'expired', holder = NULL, "heldUntil" = NULL, "updatedAt" = \(now) WHERE id = \(id)
                    """, logger: logger)
                upload.state = .expired
                upload.holder = nil
                upload.heldUntil = nil
                return .held(upload)
            }
            try await connection.run(
                """
                UPDATE resumable_upload SET holder = \(holder), "heldUntil" = \(until) WHERE id = \(id)
                """, logger: logger)
            upload.holder = holder
            upload.heldUntil = until
            return .held(upload)
        }
    }

    public func recordUploadOffset(
        id: String, holder: String, offset: Int64, length: Int64?, heldUntil: Date, expiresAt: Date,
        release: Bool, now: Date
    ) async throws -> Bool {
        let until: Date? = release ? nil : heldUntil
        return
            !(try await rows(
                """
                UPDATE resumable_upload SET "offset" = \(offset), length = COALESCE(length, \(length)), "heldUntil" = \(until),
                    holder = CASE WHEN \(release) THEN NULL ELSE holder END, "expiresAt" = \(expiresAt), "updatedAt" = \(now)
                WHERE id = \(id) AND holder = \(holder) AND state = 'receiving' RETURNING id
                """
            ).isEmpty)
    }

    public func releaseUpload(id: String, holder: String, now: Date) async throws {
        try await execute(
            "UPDATE resumable_upload SET holder = NULL, \"heldUntil\" = NULL WHERE id = \(id) AND holder = \(holder)")
    }

    public func finishUpload(
        id: String, holder: String, state: ResumableUploadState, jobId: String?, errorCode: String?,
        errorMessage: String?, now: Date
    ) async throws -> Bool {
        !(try await rows(
            """
            UPDATE resumable_upload SET state = \(state.rawValue), "jobId" = \(jobId), "errorCode" = \(errorCode),
                "errorMessage" = \(errorMessage), holder = NULL, "heldUntil" = NULL, "updatedAt" = \(now)
            WHERE id = \(id) AND holder = \(holder) AND state = 'receiving' RETURNING id
            """
        ).isEmpty)
    }

    public func terminateUpload(id: String, accountId: String, now: Date) async throws -> ResumableUpload? {
        try await transaction { connection in
            guard
                let upload = try await connection.rows(
                    """
                    SELECT \(unescaped: Self.uploadColumns) FROM resumable_upload WHERE id = \(id) AND "accountId" = \(accountId) FOR UPDATE
                    """, logger: logger
                ).first.map(Self.upload)
            else { return nil }
            if upload.state == .receiving {
                try await connection.run(
                    """
                    UPDATE resumable_upload SET state = 'terminated', holder = NULL, "heldUntil" = NULL, "updatedAt" = \(now) WHERE id = \(id)
                    """, logger: logger)
            }
            return upload
        }
    }

    public func expiredUploads(now: Date, limit: Int) async throws -> [ResumableUpload] {
        try await rows(
            """
            SELECT \(unescaped: Self.uploadColumns) FROM resumable_upload WHERE state = 'receiving' AND "expiresAt" < \(now) LIMIT \(limit)
            """
        ).map(Self.upload)
    }

    public func expireUpload(id: String, now: Date) async throws -> Bool {
        !(try await rows(
            """
            UPDATE resumable_upload SET state = 'expired', holder = NULL, "heldUntil" = NULL, "updatedAt" = \(now)
            WHERE id = \(id) AND state = 'receiving' AND "expiresAt" < \(now) AND (holder IS NULL OR "heldUntil" < \(now)) RETURNING id
            """
        ).isEmpty)
    }

    public func purgeFinishedUploads(before: Date) async throws -> Int {
        try await rows(
            "DELETE FROM resumable_upload WHERE state != 'receiving' AND \"updatedAt\" < \(before) RETURNING id"
        ).count
    }

    public func receivingUploads(accountId: String, now: Date, activeSince: Date) async throws -> Int {
        try await rows(
            """
            SELECT COUNT(*) FROM resumable_upload WHERE "accountId" = \(accountId) AND state = 'receiving'
                AND "expiresAt" >= \(now) AND ("updatedAt" >= \(activeSince) OR (holder IS NOT NULL AND "heldUntil" >= \(now)))
            """
        ).first?.decode(Int.self) ?? 0
    }

    public func uploadPlaceRefusal(
        id: String, accountId: String, now: Date, limits: @Sendable (Bool) -> QuotaLimits
    ) async throws -> QuotaRefusal? {
        try await transaction { connection -> QuotaRefusal? in
            _ = try await Self.lockAccount(accountId, on: connection, logger: logger)
            let limits = limits(try await entitlement(accountId, now: now, on: connection).grantsPro)
            let since = limits.uploadsActiveSince(now)
            let busy =
                try await connection.rows(
                    """
                    SELECT (SELECT COUNT(*) FROM job WHERE "accountId" = \(accountId) AND status IN ('pending', 'processing'))
                         + (SELECT COUNT(*) FROM resumable_upload WHERE "accountId" = \(accountId) AND id != \(id)
                              AND state = 'receiving' AND "expiresAt" >= \(now)
                              AND ("updatedAt" >= \(since) OR (holder IS NOT NULL AND "heldUntil" >= \(now))))
                         + (SELECT COUNT(*) FROM upload_admission WHERE "accountId" = \(accountId) AND "expiresAt" >= \(now))
                    """, logger: logger
                ).first?.decode(Int.self) ?? 0
            return busy >= limits.concurrent ? .tooManyJobs(limit: limits.concurrent, active: busy) : nil
        }
    }

    public func receivingUploadIDs(_ ids: [String]) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return Set(
            try await rows("SELECT id FROM resumable_upload WHERE id = ANY(\(ids)) AND state = 'receiving'").map {
                try $0.decode(String.self)
            })
    }
}

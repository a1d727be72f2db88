import Foundation
import MediaVocabulary
import Store
import PostgresStore
import Testing

/// Upload admission and the sign-up limit, held in the store so they hold across processes: both
/// engines, each with two instances on one database (two API processes as far as the engine can tell).
@Suite("Store upload admission and sign-up limit on both engines")
struct UploadAdmissionStoreTests {
    static let t0 = StoreBehaviourTests.t0

    static func upload(_ accountId: String, at now: Date = t0, expiresAt: Date? = nil) -> ResumableUpload {
        ResumableUpload(
            id: UUID().uuidString.lowercased(), accountId: accountId, flavor: "tus", length: 1000, filename: nil,
            targetDuration: 30, quality: .high, now: now, expiresAt: expiresAt ?? now.addingTimeInterval(86400))
    }

    /// An upload that received nothing for the plan's idle time stops holding the account's place
    /// (a dropped phone connection does not lock a free account out until the upload expires):
    /// another upload is admitted; the idle one, resuming, finds the place taken and is refused,
    /// and finds it again once the other ends. An upload receiving bytes keeps its place.
    @Test(arguments: Engine.allCases)
    func anIdleUploadGivesUpItsPlaceAndAsksAgainToResume(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let limits: @Sendable (Bool) -> QuotaLimits = { _ in
                QuotaLimits(monthly: 10, concurrent: 1, outputCap: 1080, retentionHours: 24, uploadIdleSeconds: 900)
            }
            let stale = try #require(try? await store.createUpload(Self.upload(account.id), now: Self.t0, limits: limits).get())
            // Within the idle time it holds the place.
            let soon = Self.t0.addingTimeInterval(600)
            guard case .failure(.tooManyJobs) = try await store.createUpload(Self.upload(account.id, at: soon), now: soon, limits: limits)
            else { Issue.record("a second upload was admitted beside a fresh one"); return }
            #expect(try await store.receivingUploads(accountId: account.id, now: soon, activeSince: soon.addingTimeInterval(-900)) == 1)
            // 16 minutes without a byte: its place is free.
            let later = Self.t0.addingTimeInterval(960)
            #expect(try await store.receivingUploads(accountId: account.id, now: later, activeSince: later.addingTimeInterval(-900)) == 0)
            let fresh = try #require(try? await store.createUpload(Self.upload(account.id, at: later), now: later, limits: limits).get())
            // Resuming, the idle one finds the place taken by the fresh one.
            guard case .some(.tooManyJobs(limit: 1, active: 1)) = try await store.uploadPlaceRefusal(
                id: stale.id, accountId: account.id, now: later, limits: limits)
            else { Issue.record("an idle upload resumed beside a fresh one"); return }
            // The fresh one, receiving bytes, keeps its place long after it was created.
            let muchLater = later.addingTimeInterval(1200)
            guard case .held = try await store.holdUpload(
                id: fresh.id, accountId: account.id, holder: "h", until: muchLater.addingTimeInterval(60), now: muchLater)
            else { Issue.record("the fresh upload could not be held"); return }
            #expect(try await store.recordUploadOffset(
                id: fresh.id, holder: "h", offset: 100, length: nil, heldUntil: muchLater.addingTimeInterval(60),
                expiresAt: muchLater.addingTimeInterval(86400), release: true, now: muchLater))
            #expect(try await store.uploadPlaceRefusal(id: stale.id, accountId: account.id, now: muchLater, limits: limits) != nil)
            // Once the fresh one ends, the idle one may resume.
            _ = try await store.terminateUpload(id: fresh.id, accountId: account.id, now: muchLater)
            #expect(try await store.uploadPlaceRefusal(id: stale.id, accountId: account.id, now: muchLater, limits: limits) == nil)
        }
    }

    /// 40 creations at once from a jobs-at-once-1 account, through two instances: exactly one
    /// upload is receiving; the rest are refused as too many jobs. A plain upload's place counts
    /// the same way, and every place comes back when its upload ends.
    @Test(arguments: Engine.allCases)
    func parallelCreationsFromALimitOneAccountAdmitOne(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let first = h.store
            let second = try await h.secondInstance()
            let (account, _) = try await first.createAccount(label: nil, plan: "free", now: Self.t0)
            let limits = StoreBehaviourTests.limits(monthly: 10, concurrent: 1)
            let outcomes = try await withThrowingTaskGroup(of: Result<ResumableUpload, QuotaRefusal>.self) { group in
                for i in 0..<40 {
                    let store = i % 2 == 0 ? first : second
                    group.addTask {
                        try await store.createUpload(Self.upload(account.id), now: Self.t0, limits: limits)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let admitted = outcomes.compactMap { try? $0.get() }
            #expect(admitted.count == 1)
            for case .failure(let refusal) in outcomes {
                guard case .tooManyJobs(limit: 1, active: let busy) = refusal else {
                    Issue.record("unexpected refusal \(refusal)")
                    continue
                }
                #expect(busy == 1)
            }
            #expect(
                try await second.receivingUploads(accountId: account.id, now: Self.t0, activeSince: .distantPast) == 1)

            // A plain upload finds the place taken, and takes it once the upload is cancelled.
            let now = Self.t0.addingTimeInterval(1)
            let plain = UUID().uuidString.lowercased()
            guard
                case .failure(.tooManyJobs) = try await first.admitUpload(
                    id: plain, accountId: account.id, until: now.addingTimeInterval(60),
                    now: now, limits: limits)
            else {
                Issue.record("a plain upload was admitted beside a receiving upload")
                return
            }
            _ = try await second.terminateUpload(id: try #require(admitted.first).id, accountId: account.id, now: now)
            guard
                case .success = try await first.admitUpload(
                    id: plain, accountId: account.id, until: now.addingTimeInterval(60),
                    now: now, limits: limits)
            else {
                Issue.record("the place of a cancelled upload did not come back")
                return
            }
            // The plain upload's place, taken in one process, is seen by the other.
            guard
                case .failure(.tooManyJobs) = try await second.createUpload(
                    Self.upload(account.id, at: now), now: now, limits: limits)
            else {
                Issue.record("a resumable upload was admitted beside a plain upload being received")
                return
            }
            // Renewed, it lasts; released, the place is free.
            try await second.renewUploadAdmission(id: plain, until: now.addingTimeInterval(600))
            let later = now.addingTimeInterval(300)
            guard
                case .failure = try await first.createUpload(
                    Self.upload(account.id, at: later), now: later, limits: limits)
            else {
                Issue.record("a renewed place lapsed")
                return
            }
            try await first.releaseUploadAdmission(id: plain)
            guard
                case .success = try await second.createUpload(
                    Self.upload(account.id, at: later), now: later, limits: limits)
            else {
                Issue.record("a released place stayed taken")
                return
            }
        }
    }

    /// A place whose request died lapses at its expiry; an upload past its expiry does not count.
    @Test(arguments: Engine.allCases)
    func lapsedPlacesAndExpiredUploadsDoNotCount(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let limits = StoreBehaviourTests.limits(monthly: 10, concurrent: 1)
            guard
                case .success = try await store.admitUpload(
                    id: "dead-process", accountId: account.id, until: Self.t0.addingTimeInterval(120),
                    now: Self.t0, limits: limits)
            else {
                Issue.record("the first place was refused")
                return
            }
            let after = Self.t0.addingTimeInterval(121)
            let stale = Self.upload(account.id, at: after, expiresAt: after.addingTimeInterval(60))
            guard case .success = try await store.createUpload(stale, now: after, limits: limits) else {
                Issue.record("a lapsed place still counted")
                return
            }
            let pastExpiry = after.addingTimeInterval(61)
            guard
                case .success = try await store.createUpload(
                    Self.upload(account.id, at: pastExpiry), now: pastExpiry, limits: limits)
            else {
                Issue.record("an upload past its expiry still counted")
                return
            }
        }
    }

    /// An append to an upload past its expiry (not yet swept) finds it expired, and it stays so:
    /// its offset cannot be recorded and its expiry cannot move.
    @Test(arguments: Engine.allCases)
    func anUploadPastItsExpiryStaysDead(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Self.t0)
            let upload = Self.upload(account.id, expiresAt: Self.t0.addingTimeInterval(3600))
            guard
                case .success = try await store.createUpload(upload, now: Self.t0, limits: StoreBehaviourTests.limits())
            else {
                Issue.record("refused")
                return
            }
            let late = Self.t0.addingTimeInterval(3601)
            let hold = try await store.holdUpload(
                id: upload.id, accountId: account.id, holder: "h", until: late.addingTimeInterval(90), now: late)
            guard case .held(let seen) = hold else {
                Issue.record("unexpected \(hold)")
                return
            }
            #expect(seen.state == .expired)
            #expect(
                try await !store.recordUploadOffset(
                    id: upload.id, holder: "h", offset: 10, length: nil, heldUntil: late.addingTimeInterval(90),
                    expiresAt: late.addingTimeInterval(86400), release: true, now: late))
            let row = try #require(try await store.upload(id: upload.id))
            #expect(row.state == .expired && row.offset == 0)
        }
    }

    /// The sign-up limit counts in the store: 10 sign-ups at once from one client through two
    /// instances admit exactly the limit; another client is not affected; the window slides.
    @Test(arguments: Engine.allCases)
    func signupLimitHoldsAcrossInstances(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let first = h.store
            let second = try await h.secondInstance()
            let admitted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<10 {
                    let store = i % 2 == 0 ? first : second
                    group.addTask {
                        try await store.admitSignup(client: "client-a", perWindow: 3, windowSeconds: 3600, now: Self.t0)
                            == .admitted
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(admitted == 3)
            let refused = try await second.admitSignup(
                client: "client-a", perWindow: 3, windowSeconds: 3600, now: Self.t0.addingTimeInterval(600))
            #expect(refused == .refused(retryAfterSeconds: 3000))
            #expect(
                try await first.admitSignup(client: "client-b", perWindow: 3, windowSeconds: 3600, now: Self.t0)
                    == .admitted)
            #expect(
                try await first.admitSignup(
                    client: "client-a", perWindow: 3, windowSeconds: 3600, now: Self.t0.addingTimeInterval(3601))
                    == .admitted)
        }
    }
}

/// A database URL that names no sslmode requires TLS (with the server's certificate verified):
/// the test cluster, which has no TLS, is refused for that reason without `?sslmode=disable`.
/// (A database that does not exist is named, so nothing is ever migrated should it connect.)
@Suite("PostgreSQL TLS by default")
struct PostgresTLSDefaultTests {
    @Test func aURLWithoutSSLModeRefusesAServerWithoutTLS() async throws {
        #expect(PostgresURL.defaultSSLMode == "require")
        guard let url = ProcessInfo.processInfo.environment["MOMENTS_TEST_DATABASE_URL"], !url.isEmpty,
            var parts = URLComponents(string: url)
        else {
            Issue.record(Comment(rawValue: StoreHarness.setupHint))
            return
        }
        #expect(
            parts.queryItems?.contains { $0.name == "sslmode" && $0.value == "disable" } == true,
            "the test cluster's URL says sslmode=disable")
        parts.path = "/moments_no_such_database"
        parts.queryItems = nil
        await #expect {
            _ = try await PostgresStore(url: parts.string!, logger: StoreHarness.logger)
        } throws: { error in
            let text = "\(error)".lowercased()
            return text.contains("ssl") && !text.contains("does not exist")
        }
        // With sslmode=disable the same server answers (here: that the database does not exist).
        parts.queryItems = [URLQueryItem(name: "sslmode", value: "disable")]
        await #expect {
            _ = try await PostgresStore(url: parts.string!, logger: StoreHarness.logger)
        } throws: { error in
            "\(error)".contains("does not exist")
        }
    }
}

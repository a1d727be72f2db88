import Foundation
import HTTPTypes
@testable import JobMedia
@testable import HTTPEdge
@testable import MomentsServer
@testable import Requests
import Store
import Testing

/// The one table from refusals to HTTP: every case has the status the API documents for its code,
/// and the problem carries the refusal's code, sentence, figures and Retry-After.
@Suite("Refusal mapping")
struct RefusalMappingTests {
    static let resets = Date(timeIntervalSince1970: 1_800_000_000)

    /// One of each case with the status it answers with.
    static let samples: [(Refusal, Int)] = [
        (.quotaExceeded(.init(limit: 5, used: 5, resetsAt: resets, plan: "free", upgradeProduct: "pro.monthly")), 402),
        (
            .tooManyJobs(
                .init(
                    limit: 1, active: 1, uploading: 0, retryAfter: 30, product: "pro.monthly",
                    upgradeJobs: 3)), 429
        ),
        (
            .dailyBudgetExceeded(
                .init(
                    limitSeconds: 600, usedSeconds: 601, resetsAt: resets, plan: "free",
                    upgradeProduct: nil, retryAfter: 90)), 429
        ),
        (.unreadable, 422),
        (.unusableMedia(kind: .notMedia, detail: "no container"), 422),
        (.tooShort(duration: 0.5), 422),
        (.tooLongForServer(duration: 4000, limit: 3600), 422),
        (.tooLongForPlan(.init(duration: 400, limitSeconds: 300, plan: "free", upgrade: ("pro.monthly", 3600))), 422),
        (
            .originalBeyondPlan(
                .init(
                    duration: 400, bytes: 5_000_000, plan: "free", limitSeconds: 300,
                    limitBytes: 1_000_000)), 422
        ),
        (.insufficientStorage, 507),
        (.storageUnavailable, 503),
        (.targetDurationNotANumber("ten"), 400),
        (.targetDurationNotWhole, 422),
        (.targetDurationOutOfRange(900, minimum: 5, maximum: 180, listsAllowed: true), 422),
        (.invalidQuality("ultra", listsAllowed: true), 422),
        (.qualityNotAString, 422),
        (.invalidAspect("2:1"), 422),
        (.aspectNotAString, 422),
        (.invalidInclude(.tooMany(11)), 422),
        (.invalidExclude(.leavesNothing), 422),
        (.uploadNotFound, 404),
        (.uploadGone, 410),
        (.uploadComplete(offset: 10, jobID: "j"), 409),
        (.uploadFailed(code: "too_short", message: "The video is 0.50 s long."), 410),
        (.uploadLocked(offset: 10, retryAfter: 30), 423),
        (.offsetMismatch(offset: 10, sent: 20), 409),
        (.lengthMismatch(.changed(length: 10, to: 20)), 400),
        (.pastLength(limit: 10), 413),
        (.appendInterrupted, 400),
        (.checksumMismatch(offset: 10), 460),
        (.serverBusy(resumable: true), 503),
        (.tooManyUploads(limit: 2, resumable: false), 429),
        (.fileTooLarge(.init(limit: 500_000_000, plan: "free", upgrade: ("pro.monthly", 4_000_000_000))), 413),
        (.invalidFocus("faces"), 422),
        (.processingUnavailable, 503),
        (.originalQualityNotInPlan(plan: "free", upgradeProduct: "pro.monthly"), 402)
    ]

    /// Which sample a case is: this switch stops compiling when a case is added without one.
    static func sampleIndex(_ refusal: Refusal) -> Int {
        switch refusal {
        case .quotaExceeded: 0
        case .tooManyJobs: 1
        case .dailyBudgetExceeded: 2
        case .unreadable: 3
        case .unusableMedia: 4
        case .tooShort: 5
        case .tooLongForServer: 6
        case .tooLongForPlan: 7
        case .originalBeyondPlan: 8
        case .insufficientStorage: 9
        case .storageUnavailable: 10
        case .targetDurationNotANumber: 11
        case .targetDurationNotWhole: 12
        case .targetDurationOutOfRange: 13
        case .invalidQuality: 14
        case .qualityNotAString: 15
        case .invalidAspect: 16
        case .aspectNotAString: 17
        case .invalidInclude: 18
        case .invalidExclude: 19
        case .uploadNotFound: 20
        case .uploadGone: 21
        case .uploadComplete: 22
        case .uploadFailed: 23
        case .uploadLocked: 24
        case .offsetMismatch: 25
        case .lengthMismatch: 26
        case .pastLength: 27
        case .appendInterrupted: 28
        case .checksumMismatch: 29
        case .serverBusy: 30
        case .tooManyUploads: 31
        case .fileTooLarge: 32
        case .invalidFocus: 33
        case .processingUnavailable: 34
        case .originalQualityNotInPlan: 35
        }
    }

    @Test func everyCaseHasASample() {
        #expect(Self.samples.map { Self.sampleIndex($0.0) } == Array(0..<36))
    }

    @Test func everyCaseMapsToItsStatus() {
        for (refusal, status) in Self.samples {
            #expect(refusal.status.code == status, "\(refusal)")
            #expect(Problem(refusal).status.code == status, "\(refusal)")
        }
    }

    /// Where openapi.json names a code in a response's description, the refusal's status is one of
    /// the statuses documented with that code.
    @Test func statusesAreTheDocumentedOnes() throws {
        let documented = try Self.documentedStatuses()
        var checked = 0
        for (refusal, _) in Self.samples {
            // A refused resumable upload replays its refusal's code as "refused" (410).
            if case .uploadFailed = refusal { continue }
            guard let statuses = documented[refusal.code] else { continue }
            checked += 1
            let status = refusal.status.code
            #expect(statuses.contains(status), "\(refusal.code): \(status) not in \(statuses.sorted())")
        }
        #expect(checked >= 15, "openapi.json names most refusal codes")
    }

    @Test func problemCarriesCodeTextFiguresAndRetryAfter() {
        let refusal = Refusal.tooManyJobs(
            .init(
                limit: 1, active: 1, uploading: 1, retryAfter: 30,
                product: "pro.monthly", upgradeJobs: 3))
        let problem = Problem(refusal)
        #expect(problem.code == "too_many_jobs")
        #expect(problem.title == "Too Many Requests")
        #expect(problem.headers[.retryAfter] == "30")
        #expect(
            problem.detail == "Your plan runs 1 job at a time and 2 are still in progress (counting uploads "
                + "still being received). Try again in about 30 s, or subscribe to pro.monthly to run 3 at once. An upload "
                + "keeps its place while it is received; an unfinished resumable upload until it completes, is cancelled "
                + "(DELETE its upload URL), expires, or receives nothing for the plan's idle time.")
        #expect(problem.extensions.count == 4)
        if case .int(let uploading)? = problem.extensions["uploading"] {
            #expect(uploading == 1)
        } else {
            Issue.record("too_many_jobs counts the uploads being received")
        }

        let quality = Problem(.invalidQuality("ultra", listsAllowed: true))
        #expect(quality.detail == "quality must be low, medium, high or original; it was \"ultra\".")
        if case .strings(let allowed)? = quality.extensions["allowed"] {
            #expect(allowed == ["low", "medium", "high", "original"])
        } else {
            Issue.record("invalid_quality lists the allowed qualities")
        }
        #expect(Problem(.invalidQuality("ultra", listsAllowed: false)).extensions.isEmpty)
        #expect(Problem(.checksumMismatch(offset: 7)).title == "Checksum Mismatch")
        #expect(Problem(.uploadLocked(offset: 7, retryAfter: 5)).title == "Locked")
        #expect(Problem(.storageUnavailable).headers[.retryAfter] == String(MediaStorageError.retryAfterSeconds))
        #expect(Problem(.uploadFailed(code: nil, message: nil)).code == "upload_failed")
    }

    /// Code → statuses whose response descriptions in openapi.json name it.
    static func documentedStatuses() throws -> [String: Set<Int>] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/MomentsServer/openapi.json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let word = try Regex("[a-z]+(?:_[a-z]+)+")
        var documented: [String: Set<Int>] = [:]
        for operations in paths.values {
            for case let operation as [String: Any] in operations.values {
                for (status, response) in operation["responses"] as? [String: Any] ?? [:] {
                    guard let code = Int(status),
                        let text = (response as? [String: Any])?["description"] as? String
                    else { continue }
                    for match in text.matches(of: word) {
                        documented[String(text[match.range]), default: []].insert(code)
                    }
                }
            }
        }
        return documented
    }
}

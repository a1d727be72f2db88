import Foundation
import MediaVocabulary
import Store

/// What a re-cut changes; whatever is nil stays as the original job had it.
public struct RecutRequest: Sendable, Equatable {
    public var targetDuration: Int?
    public var quality: String?
    public var aspect: String?
    public var focus: String?
    public var include: [Double]?
    public var exclude: [TimeRange]?

    public init(
        targetDuration: Int? = nil, quality: String? = nil, aspect: String? = nil, include: [Double]? = nil,
        exclude: [TimeRange]? = nil
    ) {
        self.targetDuration = targetDuration; self.quality = quality; self.aspect = aspect; self.include = include;
        self.exclude = exclude
    }
}

/// Why a job cannot be re-cut, for the API to tell.
public enum RecutRefusal: Error, Sendable, Equatable {
    /// No such job of the account.
    case notFound(jobID: String)
    /// Not completed (yet, or ever).
    case notCompleted(JobState)
    /// The plan does not allow re-cuts.
    case notAllowed(plan: String)
    /// The input or its analysis is no longer kept (deleted, retention over, or made before re-cuts existed).
    case inputGone
}

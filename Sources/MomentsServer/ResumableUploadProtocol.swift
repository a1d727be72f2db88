import Foundation
import HTTPEdge
import HTTPTypes
import Store
import Uploads
import Wording

/// Which resumable-upload protocol a request speaks, from its headers: tus 1.0 (`Tus-Resumable`),
/// the IETF draft (`Upload-Draft-Interop-Version` of a version we know), or neither (a plain
/// upload: a creating POST whose body is the whole file, never resumable).
enum ResumableProtocol: Equatable {
    case tus
    case ietf(version: Int)
    case plain

    /// The IETF interop versions shipping clients send: 3 (iOS 17), 5 and 6 (iOS 18), 7 and 8
    /// (the drafts after it, iOS 26), and 4 (draft -02).
    static let ietfVersions: ClosedRange<Int> = 3...8
    static let tusVersion = "1.0.0"

    static func of(_ headers: HTTPFields) -> ResumableProtocol {
        if headers[.tusResumable] != nil { return .tus }
        if let text = headers[.uploadDraftInteropVersion], let version = Int(text.trimmingCharacters(in: .whitespaces)),
            ietfVersions.contains(version)
        {
            return .ietf(version: version)
        }
        return .plain
    }

    var isIETF: Bool { if case .ietf = self { true } else { false } }

    /// IETF: whether the request says the upload is complete with it (`Upload-Complete: ?1`, or
    /// for version 3 `Upload-Incomplete: ?0`); nil when the header is absent or malformed.
    static func ietfComplete(_ headers: HTTPFields, version: Int) -> Bool? {
        if version == 3 {
            return structuredBoolean(headers[.uploadIncomplete]).map { !$0 }
        }
        return structuredBoolean(headers[.uploadComplete])
    }

    /// The IETF header that says whether an upload is complete, for a response.
    static func ietfCompleteField(_ complete: Bool, version: Int) -> (HTTPField.Name, String) {
        version == 3 ? (.uploadIncomplete, complete ? "?0" : "?1") : (.uploadComplete, complete ? "?1" : "?0")
    }

    /// An RFC 8941 boolean (`?1` / `?0`).
    static func structuredBoolean(_ text: String?) -> Bool? {
        switch text?.trimmingCharacters(in: .whitespaces) {
        case "?1": true
        case "?0": false
        default: nil
        }
    }

    /// A non-negative decimal header value (Upload-Offset, Upload-Length).
    static func size(_ text: String?) -> Int64?? {
        guard let text else { return .some(nil) }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // At most 2^50 (a petabyte): sums of a few such values cannot overflow.
        guard !trimmed.isEmpty, trimmed.utf8.count <= 19, trimmed.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let value = Int64(trimmed),
            value <= 1 << 50
        else {
            return nil
        }
        return .some(value)
    }

    /// tus `Upload-Metadata`: comma-separated `key base64value` pairs (a value may be absent).
    /// Nil when malformed; keys must be unique.
    static func tusMetadata(_ text: String?) -> [String: String]? {
        guard let text, !text.trimmingCharacters(in: .whitespaces).isEmpty else { return [:] }
        guard text.utf8.count <= 4096 else { return nil }
        var pairs: [String: String] = [:]
        for item in text.split(separator: ",") {
            let parts = item.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
            guard let key = parts.first, parts.count <= 2, pairs[String(key)] == nil else { return nil }
            if parts.count == 2 {
                guard let data = Data(base64Encoded: String(parts[1])) else { return nil }
                pairs[String(key)] = String(decoding: data, as: UTF8.self)
            } else {
                pairs[String(key)] = ""
            }
        }
        return pairs
    }

    static func tusMetadataHeader(_ values: [(String, String?)]) -> String {
        values.compactMap { key, value in value.map { "\(key) \(Data($0.utf8).base64EncodedString())" } }.joined(
            separator: ",")
    }

    /// tus `Upload-Checksum: <algorithm> <base64 digest>`. Throws 400 for an unknown algorithm or
    /// a malformed value.
    static func tusChecksum(_ text: String?) throws -> ResumableUploads.Checksum? {
        guard let text else { return nil }
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ")
        guard parts.count == 2, let data = Data(base64Encoded: String(parts[1])) else {
            throw Problem.badRequest(
                "invalid_checksum",
                Say.invalidChecksum)
        }
        guard let algorithm = ResumableUploads.Checksum.Algorithm(rawValue: parts[0].lowercased()) else {
            throw Problem.badRequest(
                "unsupported_checksum",
                Say.unsupportedChecksum(String(parts[0]), allowed: checksumAlgorithms),
                extensions: ["allowed": .strings(ResumableUploads.Checksum.Algorithm.allCases.map(\.rawValue))])
        }
        return ResumableUploads.Checksum(algorithm: algorithm, digest: [UInt8](data))
    }

    static let checksumAlgorithms = ResumableUploads.Checksum.Algorithm.allCases.map(\.rawValue).joined(separator: ",")
    static let tusExtensions = "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum"

    /// An HTTP date (Upload-Expires).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"  // not for users: HTTP's date form
        return formatter.string(from: date)
    }
}

extension HTTPField.Name {
    static let tusResumable = Self("Tus-Resumable")!
    static let tusVersion = Self("Tus-Version")!
    static let tusExtension = Self("Tus-Extension")!
    static let tusMaxSize = Self("Tus-Max-Size")!
    static let tusChecksumAlgorithm = Self("Tus-Checksum-Algorithm")!
    static let uploadOffset = Self("Upload-Offset")!
    static let uploadLength = Self("Upload-Length")!
    static let uploadDeferLength = Self("Upload-Defer-Length")!
    static let uploadMetadata = Self("Upload-Metadata")!
    static let uploadExpires = Self("Upload-Expires")!
    static let uploadChecksum = Self("Upload-Checksum")!
    static let uploadComplete = Self("Upload-Complete")!
    static let uploadIncomplete = Self("Upload-Incomplete")!
    static let uploadDraftInteropVersion = Self("Upload-Draft-Interop-Version")!
    static let uploadLimit = Self("Upload-Limit")!
    static let momentsJobId = Self("Moments-Job-Id")!
    static let acceptPatch = Self("Accept-Patch")!
}

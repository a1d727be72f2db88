import Crypto
import Foundation
import Store

/// Short-lived signed links to a completed job's highlight, poster and storyboard, for a client
/// that cannot put the key in a header (a browser's `<video src>`, `<img src>`, a download link).
///
/// A link's token is `payload.signature`, both base64url: the payload names the job, the account,
/// the API key that asked, the file and the expiry; the signature is HMAC-SHA256 of the payload
/// keyed with HMAC(the server secret's media-link key, the stored hash of that API key). Every API
/// host sharing the secret checks any link; revoking the key (or disabling the account) voids its
/// links at once; and a copy of the database alone (the hashes) forges none: the server secret
/// never lives there (`ServerSecret`). A link opens one file of one job of one account, until it
/// expires.
public enum MediaLinks {
    /// The files a link can open.
    public static let files: [String: MediaFile] = [
        "highlight.mp4": .result, "poster.jpg": .poster, "storyboard.png": .storyboard, "preview.mp4": .preview
    ]
    /// How long a link works.
    public static let lifetimeSeconds: Int64 = 3600
    /// Longer tokens are not ours (and are not decoded).
    static let maxTokenLength = 600

    public struct Claims: Sendable, Equatable {
        public var jobId: String
        public var accountId: String
        public var keyId: String
        public var file: String
        public var expires: Int64

        public init(jobId: String, accountId: String, keyId: String, file: String, expires: Int64) {
            self.jobId = jobId; self.accountId = accountId; self.keyId = keyId; self.file = file; self.expires = expires
        }
    }

    public enum Refusal: Error, Equatable, Sendable {
        /// Malformed, forged, for a revoked key, a disabled account or a job that is not the account's.
        case invalid
        case expired
    }

    public static func token(_ claims: Claims, keyHash: String, secret: ServerSecret) -> String {
        let payload = Data(
            ["v1", claims.jobId, claims.accountId, claims.keyId, claims.file, String(claims.expires)]
                .joined(separator: "|").utf8)
        return base64url(payload) + "." + base64url(signature(payload, keyHash: keyHash, secret: secret))
    }

    static func signature(_ payload: Data, keyHash: String, secret: ServerSecret) -> Data {
        let key = HMAC<SHA256>.authenticationCode(for: Data(keyHash.utf8), using: secret.key(for: "media-links"))
        return Data(HMAC<SHA256>.authenticationCode(for: payload, using: SymmetricKey(data: Data(key))))
    }

    /// The claims a token says it has, unverified (nil when it is not a token of ours).
    static func claims(of token: Substring) -> (Claims, payload: Data, signature: Data)? {
        guard token.utf8.count <= maxTokenLength else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = data(base64url: parts[0]), let signature = data(base64url: parts[1]),
            let text = String(data: payload, encoding: .utf8)
        else { return nil }
        let fields = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 6, fields[0] == "v1", files[fields[4]] != nil, let expires = Int64(fields[5]) else {
            return nil
        }
        return (
            Claims(jobId: fields[1], accountId: fields[2], keyId: fields[3], file: fields[4], expires: expires),
            payload, signature
        )
    }

    static func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func data(base64url text: Substring) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return nil
        }
        var plain = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while plain.count % 4 != 0 { plain += "=" }
        return Data(base64Encoded: plain)
    }

    /// Constant time in the length of `a`.
    static func equal(_ a: Data, _ b: Data) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// Signs links for an account's jobs and opens them, against the keys in the store now.
public struct MediaLinkSigner: Sendable {
    let database: any AccountRepository & JobRepository & KeyRepository
    let secret: ServerSecret
    let clock: @Sendable () -> Date

    public init(database: any AccountRepository & JobRepository & KeyRepository, secret: ServerSecret, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.database = database
        self.secret = secret
        self.clock = clock
    }

    /// Signed links (tokens) for each file of `job`, made with the key `keyId` of `account`.
    public func mediaLinks(job: Job, account: Account, keyId: String) async throws -> (
        tokens: [String: String], expires: Date
    )? {
        guard let key = try await database.keys(accountId: account.id).first(where: { $0.id == keyId && $0.isActive })
        else { return nil }
        let expires = Int64(clock().timeIntervalSince1970) + MediaLinks.lifetimeSeconds
        var tokens: [String: String] = [:]
        for file in MediaLinks.files.keys {
            tokens[file] = MediaLinks.token(
                .init(jobId: job.id, accountId: account.id, keyId: keyId, file: file, expires: expires),
                keyHash: key.hash, secret: secret)
        }
        return (tokens, Date(timeIntervalSince1970: TimeInterval(expires)))
    }

    /// The job and file a link opens, checked against the store now.
    public func mediaLink(_ token: Substring) async throws -> Result<(Job, MediaFile), MediaLinks.Refusal> {
        guard let (claims, payload, signature) = MediaLinks.claims(of: token), let file = MediaLinks.files[claims.file]
        else {
            return .failure(.invalid)
        }
        guard let key = try await database.keys(accountId: claims.accountId).first(where: { $0.id == claims.keyId }),
            MediaLinks.equal(MediaLinks.signature(payload, keyHash: key.hash, secret: secret), signature)
        else { return .failure(.invalid) }
        guard Int64(clock().timeIntervalSince1970) < claims.expires else { return .failure(.expired) }
        guard key.isActive, let account = try await database.account(id: claims.accountId), !account.isDisabled,
            let job = try await database.job(id: claims.jobId, accountId: account.id)
        else { return .failure(.invalid) }
        return .success((job, file))
    }
}

import Foundation
import JWTKit

/// The provider authentication token (a JWT signed ES256 with the team's key: header `kid`, claims
/// `iss` = team and `iat`), reused for every push and replaced once it is `refreshAge` old: Apple
/// refuses tokens older than an hour and answers TooManyProviderTokenUpdates to a provider that
/// replaces its token more often than every 20 minutes. Concurrent callers share one signing.
public actor APNsProviderToken {
    /// A token this old is replaced (between Apple's 20-minute floor and its one-hour limit).
    public static let refreshAge: TimeInterval = 50 * 60

    public struct Issued: Sendable, Equatable {
        public var jwt: String
        public var issuedAt: Date
    }

    struct Claims: JWTPayload {
        var iss: String
        var iat: Int
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    let keys = JWTKeyCollection()
    let key: ES256PrivateKey
    let keyId: String
    let teamId: String
    private var keyAdded = false
    private var issued: Issued?
    private var signing: Task<Issued, any Error>?
    /// Tokens signed so far (tests check one serves many pushes).
    public private(set) var signedCount = 0

    public init(credentials: APNsCredentials) {
        key = credentials.key
        keyId = credentials.keyId
        teamId = credentials.teamId
    }

    /// The token to send at `now`: the current one while it is younger than `refreshAge`, else a new one.
    public func current(now: Date) async throws -> Issued {
        if let issued, now.timeIntervalSince(issued.issuedAt) < Self.refreshAge,
            now >= issued.issuedAt.addingTimeInterval(-60)
        {
            return issued
        }
        if let signing { return try await signing.value }
        if !keyAdded {
            keyAdded = true
            await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyId))
        }
        if let signing { return try await signing.value }
        let task = Task { [keys, keyId, teamId] in
            let seconds = Int(now.timeIntervalSince1970)
            let jwt = try await keys.sign(Claims(iss: teamId, iat: seconds), kid: JWKIdentifier(string: keyId))
            return Issued(jwt: jwt, issuedAt: Date(timeIntervalSince1970: Double(seconds)))
        }
        signing = task
        defer { signing = nil }
        let fresh = try await task.value
        issued = fresh
        signedCount += 1
        return fresh
    }

    /// APNs answered 403 ExpiredProviderToken to `jwt`: the next `current` signs a new token (once,
    /// however many pushes saw the same answer).
    public func expired(_ jwt: String) {
        if issued?.jwt == jwt { issued = nil }
    }
}

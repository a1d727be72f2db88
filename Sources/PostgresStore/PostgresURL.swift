import Foundation
import NIOSSL
import PostgresNIO

/// Why a database URL was refused. The messages never repeat the URL (it holds the password).
public struct PostgresURLError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A `postgres://` or `postgresql://` URL as PostgresClient's configuration:
/// `postgres://user:password@host:port/database?sslmode=disable|prefer|require|verify-ca|verify-full`.
/// User and password are percent-decoded; the port defaults to 5432, the database to the user's
/// name (as libpq does); sslmode defaults to `require` (a URL without it never talks in clear, and
/// never to a server that cannot prove its name: a local server without TLS needs
/// `?sslmode=disable` said explicitly). `require` and `verify-full` verify the
/// server's certificate and host name (`verify-ca` the certificate only): a TLS connection that
/// accepts any certificate protects against nothing an attacker on the path cares about.
public enum PostgresURL {
    /// The sslmode of a URL that names none.
    public static let defaultSSLMode = "require"

    public static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        try parse(url).clientConfiguration
    }

    /// What the URL says.
    struct Parts {
        enum Security { case disable, prefer(TLSConfiguration), require(TLSConfiguration) }
        var host: String
        var port: Int
        var user: String
        var password: String?
        var database: String
        var security: Security

        var clientConfiguration: PostgresClient.Configuration {
            let tls: PostgresClient.Configuration.TLS
            switch security {
            case .disable: tls = .disable
            case .prefer(let configuration): tls = .prefer(configuration)
            case .require(let configuration): tls = .require(configuration)
            }
            return PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }

        func connectionConfiguration() throws -> PostgresConnection.Configuration {
            let tls: PostgresConnection.Configuration.TLS
            switch security {
            case .disable: tls = .disable
            case .prefer(let configuration): tls = .prefer(try NIOSSLContext(configuration: configuration))
            case .require(let configuration): tls = .require(try NIOSSLContext(configuration: configuration))
            }
            return PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }

        /// Where, for messages: never the password.
        var redacted: String { "\(user)@\(host):\(port)/\(database)" }
    }

    static func parse(_ url: String) throws -> Parts {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased() else {
            throw PostgresURLError(
                "the database URL is not a URL; expected postgres://user:password@host:5432/database")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw PostgresURLError("the database URL must start with postgres:// or postgresql://")
        }
        guard let user = parts.percentEncodedUser?.removingPercentEncoding, !user.isEmpty else {
            throw PostgresURLError(
                "the database URL names no user; expected postgres://user:password@host:5432/database")
        }
        let password = parts.percentEncodedPassword?.removingPercentEncoding
        var host = parts.host ?? ""
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw PostgresURLError("the database URL names no host") }
        let port = parts.port ?? 5432
        guard (1...65535).contains(port) else { throw PostgresURLError("the database URL's port is out of range") }
        var database = parts.percentEncodedPath.removingPercentEncoding ?? ""
        if database.hasPrefix("/") { database.removeFirst() }
        if database.isEmpty { database = user }

        var sslmode = Self.defaultSSLMode
        for item in parts.queryItems ?? [] {
            switch item.name {
            case "sslmode": sslmode = item.value ?? ""
            default:
                throw PostgresURLError(
                    "the database URL has an unsupported parameter \"\(item.name)\" (only sslmode is understood)")
            }
        }
        let security: Parts.Security
        switch sslmode {
        case "disable": security = .disable
        case "allow", "prefer": security = .prefer(.makeClientConfiguration())
        case "require", "verify-full": security = .require(.makeClientConfiguration())
        case "verify-ca":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .noHostnameVerification
            security = .require(configuration)
        default:
            throw PostgresURLError(
                "the database URL's sslmode must be disable, prefer, require, verify-ca or verify-full")
        }
        return Parts(host: host, port: port, user: user, password: password, database: database, security: security)
    }
}

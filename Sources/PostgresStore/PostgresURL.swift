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
/// name (as libpq does); sslmode defaults to `prefer`. `require` and `verify-full` verify the
/// server's certificate and host name (`verify-ca` the certificate only): a TLS connection that
/// accepts any certificate protects against nothing an attacker on the path cares about.
public enum PostgresURL {
    public static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased() else {
            throw PostgresURLError("the database URL is not a URL; expected postgres://user:password@host:5432/database")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw PostgresURLError("the database URL must start with postgres:// or postgresql://")
        }
        guard let user = parts.percentEncodedUser?.removingPercentEncoding, !user.isEmpty else {
            throw PostgresURLError("the database URL names no user; expected postgres://user:password@host:5432/database")
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

        var sslmode = "prefer"
        for item in parts.queryItems ?? [] {
            switch item.name {
            case "sslmode": sslmode = item.value ?? ""
            default: throw PostgresURLError("the database URL has an unsupported parameter \"\(item.name)\" (only sslmode is understood)")
            }
        }
        let tls: PostgresClient.Configuration.TLS
        switch sslmode {
        case "disable": tls = .disable
        case "allow", "prefer": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-full": tls = .require(.makeClientConfiguration())
        case "verify-ca":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .noHostnameVerification
            tls = .require(configuration)
        default:
            throw PostgresURLError("the database URL's sslmode must be disable, prefer, require, verify-ca or verify-full")
        }
        return PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }
}

import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a webhook URL is refused, in words for its owner (the HTTP layer shows `detail`; the
/// dispatcher logs it as the attempt's error).
public struct WebhookTargetRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// invalid_webhook_url, webhook_https_required, webhook_private_target, webhook_unresolvable,
    /// webhook_lookup_busy (transient: too many lookups at once)
    public var code: String
    public var detail: String
    public var description: String { detail }
}

/// A URL that passed the checks, with the address it resolved to.
public struct WebhookTarget: Sendable, Equatable {
    public var url: String
    /// The addresses the host resolved to (all allowed).
    public var addresses: [String]
    /// The URL the request is sent to: for http, the host replaced by the checked address (the
    /// connection goes where the check looked: no second DNS answer); for https the URL itself
    /// (the certificate is checked against the name).
    public var requestURL: String
    /// The Host header to send with `requestURL` when it names an address (nil: the URL's own).
    public var hostHeader: String?
}

/// What a webhook may be sent to: http(s) URLs of at most 2 KB without credentials, whose host
/// resolves only to public addresses (unless `webhooks.allowPrivateTargets`); https required
/// unless `allowPrivateTargets`.
public enum WebhookTargets {
    public static let maxURLLength = 2048

    /// Parses and checks `text`, resolving its host (getaddrinfo on a thread of its own).
    public static func check(_ text: String, allowPrivate: Bool) async throws(WebhookTargetRefusal) -> WebhookTarget {
        let (components, host) = try parse(text, allowPrivate: allowPrivate)
        let addresses: [String]
        do {
            addresses = try await resolve(host)
        } catch ResolutionError.busy {
            throw WebhookTargetRefusal(code: "webhook_lookup_busy",
                                       detail: "The server is checking many webhook addresses at the moment. Try again in a few seconds.")
        } catch {
            throw WebhookTargetRefusal(code: "webhook_unresolvable",
                                       detail: "The host \(host) of the webhook URL does not resolve to an address. Check the URL's spelling and DNS.")
        }
        guard let first = addresses.first else {
            throw WebhookTargetRefusal(code: "webhook_unresolvable",
                                       detail: "The host \(host) of the webhook URL does not resolve to an address. Check the URL's spelling and DNS.")
        }
        if !allowPrivate {
            for address in addresses {
                if let kind = classify(address) {
                    throw WebhookTargetRefusal(code: "webhook_private_target",
                                               detail: "The webhook URL's host \(host) resolves to \(address), a \(kind) address; webhooks go only to public internet addresses. Use a publicly reachable https URL.")
                }
            }
        }
        var target = WebhookTarget(url: text, addresses: addresses, requestURL: text, hostHeader: nil)
        if components.scheme?.lowercased() == "http" {
            let bracketed = { (address: String) in address.contains(":") ? "[\(address)]" : address }
            let port = components.port.map { ":\($0)" } ?? ""
            let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            target.requestURL = "http://" + bracketed(first) + port + path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
            target.hostHeader = bracketed(host) + port
        }
        return target
    }

    /// The URL's form alone (no DNS): scheme, length, host, no credentials.
    static func parse(_ text: String, allowPrivate: Bool) throws(WebhookTargetRefusal) -> (URLComponents, String) {
        guard text.utf8.count <= maxURLLength else {
            throw WebhookTargetRefusal(code: "invalid_webhook_url", detail: "The webhook URL is longer than \(maxURLLength) bytes; use a shorter one.")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              var host = components.host, !host.isEmpty else {
            throw WebhookTargetRefusal(code: "invalid_webhook_url",
                                       detail: "The webhook URL must be an absolute http or https URL such as https://example.com/moments-webhook.")
        }
        guard scheme == "https" || scheme == "http" else {
            throw WebhookTargetRefusal(code: "invalid_webhook_url", detail: "The webhook URL must start with https:// (not \(scheme)://).")
        }
        guard scheme == "https" || allowPrivate else {
            throw WebhookTargetRefusal(code: "webhook_https_required",
                                       detail: "Webhooks are sent only over https: use an https:// URL for your endpoint.")
        }
        guard components.user == nil, components.password == nil else {
            throw WebhookTargetRefusal(code: "invalid_webhook_url",
                                       detail: "The webhook URL must not contain a user name or password; verify deliveries with the Moments-Signature header instead.")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (components, host)
    }

    /// Lookups running now, and the most allowed at once: each holds a thread (getaddrinfo
    /// blocks, up to the resolver's timeout), so a burst of registrations cannot pile them up.
    static let lookups = Mutex<Int>(0)
    public static let maxConcurrentLookups = 32

    /// The addresses `host` resolves to, as text. getaddrinfo blocks: it runs on a thread of its
    /// own, never on the cooperative pool.
    public static func resolve(_ host: String) async throws -> [String] {
        let admitted = lookups.withLock { count -> Bool in
            guard count < maxConcurrentLookups else { return false }
            count += 1
            return true
        }
        guard admitted else { throw ResolutionError.busy }
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                let result = Result { try resolveBlocking(host) }
                lookups.withLock { $0 -= 1 }
                continuation.resume(with: result)
            }.start()
        }
    }

    enum ResolutionError: Error { case failed, busy }

    static func resolveBlocking(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { throw ResolutionError.failed }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let address = info.pointee.ai_addr, let text = numeric(address, family: info.pointee.ai_family), !addresses.contains(text) {
                addresses.append(text)
            }
            cursor = info.pointee.ai_next
        }
        return addresses
    }

    static func numeric(_ address: UnsafeMutablePointer<sockaddr>, family: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch family {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var addr = sin.pointee.sin_addr
                guard inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
                return String(cString: buffer)
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                var addr = sin6.pointee.sin6_addr
                guard inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
                return String(cString: buffer)
            }
        default:
            return nil
        }
    }

    /// The bytes of a numeric IPv4 (4) or IPv6 (16) address; nil when `text` is neither.
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Nil for a public unicast address; otherwise what it is ("loopback", "private", "link-local",
    /// "unspecified", "multicast", "reserved"). Text that is not an address counts as "reserved".
    public static func classify(_ address: String) -> String? {
        guard let b = bytes(address) else { return "reserved" }
        if b.count == 4 { return classifyV4(b) }
        // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible forms are judged by their IPv4 address.
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff { return classifyV4(Array(b[12..<16])) }
        if b.allSatisfy({ $0 == 0 }) { return "unspecified" }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return "loopback" }
        if b[0..<12].allSatisfy({ $0 == 0 }) { return "reserved" }
        if b[0] & 0xfe == 0xfc { return "private" }                  // fc00::/7 unique local
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return "link-local" } // fe80::/10
        if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { return "private" }    // fec0::/10 site-local (deprecated)
        if b[0] == 0xff { return "multicast" }                       // ff00::/8
        // NAT64 (64:ff9b::/96) reaches an IPv4 address: judged by it.
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4..<12].allSatisfy({ $0 == 0 }) {
            return classifyV4(Array(b[12..<16]))
        }
        return nil
    }

    static func classifyV4(_ b: [UInt8]) -> String? {
        switch (b[0], b[1]) {
        case (0, _): return b.allSatisfy { $0 == 0 } ? "unspecified" : "reserved"   // 0.0.0.0/8
        case (10, _): return "private"                                             // 10/8
        case (100, 64...127): return "private"                                     // 100.64/10 (CGNAT)
        case (127, _): return "loopback"                                           // 127/8
        case (169, 254): return "link-local"                                       // 169.254/16
        case (172, 16...31): return "private"                                      // 172.16/12
        case (192, 168): return "private"                                          // 192.168/16
        case (192, 0) where b[2] == 0: return "reserved"                           // 192.0.0/24 (IETF)
        case (198, 18...19): return "reserved"                                     // 198.18/15 (benchmarking)
        case (224...239, _): return "multicast"                                    // 224/4
        case (240...255, _): return "reserved"                                     // 240/4 and broadcast
        default: return nil
        }
    }
}

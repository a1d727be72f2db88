#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address as bytes (4 or 16); IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are
/// read as the IPv4 address they carry.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: some StringProtocol) {
        var text = String(text).trimmed(" \t")
        // "[v6]:port", "[v6]" and "v4:port" as proxies sometimes write them.
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let raw = withUnsafeBytes(of: &v6) { Array($0) }
        if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
            bytes = Array(raw[12...])
        } else {
            bytes = raw
        }
    }

    public var isIPv4: Bool { bytes.count == 4 }

    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    /// The first `bits` bits, the rest zeroed.
    public func prefix(_ bits: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, bits - index * 8))
            return kept == 8 ? byte : byte & ~(UInt8(0xFF) >> kept)
        }
    }

    /// Who counts as one client for sign-up limits: the address for IPv4, its /64 for IPv6 (one
    /// subscriber usually holds a whole /64).
    public var limiterKey: String {
        if isIPv4 { return description }
        return IPAddress(bytesOf: prefix(64)).description + "/64"
    }

    private init(bytesOf bytes: [UInt8]) { self.bytes = bytes }
}

/// A CIDR range such as 10.0.0.0/8 or 2001:db8::/32 (an address alone is a range of one).
public struct IPRange: Sendable, Hashable {
    public let network: IPAddress
    public let bits: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(first) else { return nil }
        let width = address.bytes.count * 8
        var bits = width
        if parts.count == 2 {
            guard let given = Int(parts[1]), given >= 0, given <= width else { return nil }
            bits = given
        }
        network = address
        self.bits = bits
    }

    public func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == network.bytes.count && address.prefix(bits) == network.prefix(bits)
    }
}

/// Decides which address a request comes from: the TCP peer, unless the peer is a trusted proxy
/// (`http.trustedProxies`); then the right-most X-Forwarded-For address that is not itself a
/// trusted proxy (the left part of the header is whatever the client chose to send).
public struct ClientAddressResolver: Sendable {
    public let trusted: [IPRange]

    /// Entries that are not an address or CIDR range are left out (and listed in `invalid`): the
    /// proxies they meant are then not believed, which is the safe side.
    public init(trustedProxies: [String]) {
        var ranges: [IPRange] = []
        var invalid: [String] = []
        for text in trustedProxies {
            if let range = IPRange(text.trimmed(" ")) { ranges.append(range) } else { invalid.append(text) }
        }
        trusted = ranges
        self.invalid = invalid
    }

    public let invalid: [String]

    public func isTrusted(_ address: IPAddress) -> Bool { trusted.contains { $0.contains(address) } }

    /// The client's address, or nil when the peer is unknown (no socket, e.g. a unit test).
    public func client(peer: String?, forwardedFor: [String]) -> IPAddress? {
        guard let peer = peer.flatMap({ IPAddress($0) }) else { return nil }
        guard isTrusted(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }
        for hop in hops.reversed() {
            guard let address = IPAddress(hop) else { return peer }
            if !isTrusted(address) { return address }
        }
        // Every hop is a trusted proxy: the left-most one is as far as we can see.
        return hops.first.flatMap { IPAddress($0) } ?? peer
    }
}

private extension String {
    public func trimmed(_ set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}

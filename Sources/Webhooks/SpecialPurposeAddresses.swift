import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and the RFCs that added to
/// them), plus what lies outside IPv6 global unicast (2000::/3): every address a webhook must not
/// be sent to. `classify` answers nil only for a public unicast address.
public enum SpecialPurposeAddresses {
    /// A prefix of the registry and the word the owner of a refused URL is shown for it.
    struct Block: Sendable {
        var prefix: [UInt8]
        var length: Int
        var kind: String

        init(_ address: String, _ length: Int, _ kind: String) {
            guard let bytes = SpecialPurposeAddresses.bytes(address) else {
                preconditionFailure("not an address: \(address)")
            }
            prefix = bytes; self.length = length; self.kind = kind
        }

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == prefix.count else { return false }
            var bits = length
            var index = 0
            while bits >= 8 {
                if address[index] != prefix[index] { return false }
                index += 1
                bits -= 8
            }
            if bits > 0 {
                let mask = UInt8(truncatingIfNeeded: 0xff << (8 - bits))
                if address[index] & mask != prefix[index] & mask { return false }
            }
            return true
        }
    }

    /// Most specific first (the first block that holds an address names it).
    static let ipv4: [Block] = [
        Block("0.0.0.0", 32, "unspecified"),
        Block("0.0.0.0", 8, "reserved"),  // "this network"
        Block("10.0.0.0", 8, "private"),
        Block("100.64.0.0", 10, "private"),  // shared address space (CGNAT)
        Block("127.0.0.0", 8, "loopback"),
        Block("169.254.0.0", 16, "link-local"),
        Block("172.16.0.0", 12, "private"),
        Block("192.0.0.0", 24, "reserved"),  // IETF protocol assignments
        Block("192.0.2.0", 24, "documentation"),  // TEST-NET-1
        Block("192.31.196.0", 24, "reserved"),  // AS112-v4
        Block("192.52.193.0", 24, "reserved"),  // AMT
        Block("192.88.99.0", 24, "reserved"),  // deprecated 6to4 relay anycast
        Block("192.168.0.0", 16, "private"),
        Block("192.175.48.0", 24, "reserved"),  // direct delegation AS112
        Block("198.18.0.0", 15, "benchmarking"),
        Block("198.51.100.0", 24, "documentation"),  // TEST-NET-2
        Block("203.0.113.0", 24, "documentation"),  // TEST-NET-3
        Block("224.0.0.0", 4, "multicast"),
        Block("255.255.255.255", 32, "reserved"),  // limited broadcast
        Block("240.0.0.0", 4, "reserved")
    ]

    /// Most specific first; IPv4-mapped addresses (::ffff:0:0/96) are judged by their IPv4 address
    /// before this table is read.
    static let ipv6: [Block] = [
        Block("::", 128, "unspecified"),
        Block("::1", 128, "loopback"),
        Block("::ffff:0:0:0", 96, "reserved"),  // IPv4-translated
        Block("64:ff9b::", 96, "reserved"),  // NAT64 well-known prefix
        Block("64:ff9b:1::", 48, "reserved"),  // local-use NAT64
        Block("100::", 64, "reserved"),  // discard-only
        Block("2001:db8::", 32, "documentation"),
        Block("2001::", 23, "reserved"),  // IETF protocol assignments (Teredo, ORCHID, AMT, AS112…)
        Block("2002::", 16, "reserved"),  // 6to4
        Block("2620:4f:8000::", 48, "reserved"),  // direct delegation AS112
        Block("3fff::", 20, "documentation"),
        Block("5f00::", 16, "reserved"),  // segment routing SIDs
        Block("fc00::", 7, "private"),  // unique local
        Block("fe80::", 10, "link-local"),
        Block("fec0::", 10, "private"),  // site-local (deprecated)
        Block("ff00::", 8, "multicast")
    ]

    /// IPv6 global unicast: an address outside it is not on the public internet.
    static let globalUnicast = Block("2000::", 3, "global")

    /// Nil for a public unicast address; otherwise what it is ("loopback", "private",
    /// "link-local", "unspecified", "multicast", "documentation", "benchmarking", "reserved").
    /// Text that is not a numeric address counts as "reserved".
    public static func classify(_ address: String) -> String? {
        guard let bytes = bytes(address) else { return "reserved" }
        return classify(bytes: bytes)
    }

    /// The same for the 4 or 16 bytes of an address.
    public static func classify(bytes: [UInt8]) -> String? {
        switch bytes.count {
        case 4:
            return ipv4.first { $0.contains(bytes) }?.kind
        case 16:
            // IPv4-mapped (::ffff:a.b.c.d): a socket connects to the IPv4 address itself.
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                return ipv4.first { $0.contains(Array(bytes[12..<16])) }?.kind
            }
            if let block = ipv6.first(where: { $0.contains(bytes) }) { return block.kind }
            return globalUnicast.contains(bytes) ? nil : "reserved"
        default:
            return "reserved"
        }
    }

    /// The bytes of a numeric IPv4 (4) or IPv6 (16) address in its standard text form; nil when
    /// `text` is neither.
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}

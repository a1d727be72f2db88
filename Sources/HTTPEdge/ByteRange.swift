/// RFC 9110 §14 byte ranges for one representation of `size` bytes.
public enum ByteRange: Equatable, Sendable {
    /// Serve the whole representation (no Range, an unknown unit, or several ranges: allowed to be
    /// ignored by §14.2).
    case full
    /// Serve these bytes (206).
    case partial(ClosedRange<Int64>)
    /// 416, with `Content-Range: bytes */size`.
    case unsatisfiable

    public static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return .full }
        let unitAndSet = header.split(separator: "=", maxSplits: 1)
        guard unitAndSet.count == 2 else { return .unsatisfiable }
        guard unitAndSet[0].trimmingCharacters(in: .whitespaces).lowercased() == "bytes" else { return .full }
        let specs = unitAndSet[1].split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count == 1 else {
            // Multiple ranges: valid syntax is served whole; invalid syntax is refused.
            return specs.allSatisfy({ parseSpec(String($0), size: Int64.max) != nil }) ? .full : .unsatisfiable
        }
        guard let range = parseSpec(String(specs[0]), size: size) else { return .unsatisfiable }
        return range
    }

    /// Decimal digits; a value too large for Int64 counts as Int64.max (RFC 9110 §14.1.2: a
    /// last position past the end means "to the end").
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
        return Int64(text) ?? Int64.max
    }

    /// One `first-last`, `first-` or `-suffix`; nil when malformed.
    private static func parseSpec(_ spec: String, size: Int64) -> ByteRange? {
        let spec = spec.trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash], lastText = spec[spec.index(after: dash)...]
        if firstText.isEmpty {
            guard let suffix = number(lastText) else { return nil }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - suffix)...(size - 1))
        }
        guard let first = number(firstText) else { return nil }
        var last = size - 1
        if !lastText.isEmpty {
            guard let value = number(lastText), value >= first else { return nil }
            last = min(value, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .partial(first...last)
    }
}

import Foundation

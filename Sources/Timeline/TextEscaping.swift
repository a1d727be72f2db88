import Foundation

/// Escaping of user-supplied text (file names, titles) for each output syntax.
enum TextEscaping {
    /// Text for an XML 1.0 attribute value in double quotes: markup characters as entities,
    /// line breaks and tabs as character references (so attribute normalisation keeps them), and
    /// characters XML 1.0 forbids (other C0 controls, U+FFFE/U+FFFF) dropped.
    static func xmlAttribute(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n": out += "&#10;"
            case "\r": out += "&#13;"
            case "\t": out += "&#9;"
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF { continue }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A `file:` URL for a bare file name: `file:///` followed by the name's UTF-8 bytes,
    /// percent-encoded except for RFC 3986 unreserved characters (so spaces, `&`, `<`, quotes,
    /// `#`, `?`, `/` and non-ASCII are all encoded).
    static func fileURL(forName name: String) -> String {
        "file:///" + percentEncoded(name)
    }

    /// Percent-encodes everything but `A-Z a-z 0-9 - . _ ~`.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF")
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out.append("%")
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return out
    }

    /// A JSON string literal (with quotes): `"` and `\` escaped, control characters as `\uXXXX`,
    /// everything else kept as UTF-8.
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let code = String(scalar.value, radix: 16, uppercase: false)
                    out += "\\u" + String(repeating: "0", count: 4 - code.count) + code
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Text for one line of an EDL: control characters (line breaks included) become spaces,
    /// and the result is trimmed and cut to `limit` characters.
    static func edlLine(_ text: String, limit: Int = 200) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            let control =
                scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value)
                || scalar.value == 0x2028 || scalar.value == 0x2029
            out.unicodeScalars.append(control ? " " : scalar)
        }
        return String(out.trimmingCharacters(in: .whitespaces).prefix(limit))
    }

    /// An 8-character CMX 3600 reel name from a file name: the ASCII letters and digits of its
    /// stem (underscores kept), upper-cased and cut to 8; "AX" (auxiliary source) when none is left.
    static func reelName(forFileName name: String) -> String {
        var stem = Substring(name)
        if let dot = stem.lastIndex(of: "."), dot != stem.startIndex { stem = stem[..<dot] }
        var reel = ""
        for scalar in stem.unicodeScalars where reel.count < 8 {
            if ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_" {
                reel.unicodeScalars.append(scalar)
            } else if ("a"..."z").contains(scalar) {
                reel += String(scalar).uppercased()
            }
        }
        return reel.isEmpty || reel.allSatisfy({ $0 == "_" }) ? "AX" : reel
    }

    /// A number with up to `digits` decimals and no trailing zeros ("1.5", "-0.25", "2").
    static func decimal(_ value: Double, digits: Int = 4) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        if rounded == 0 { return "0" }
        var text = String(format: "%.\(digits)f", rounded)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}

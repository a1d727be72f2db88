import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A small element tree read with Foundation's XMLParser: enough for S3's responses
/// (ListObjectsV2, InitiateMultipartUpload, CompleteMultipartUpload, Error). Namespaces are ignored.
struct S3XMLNode: Sendable {
    var name: String
    var text: String
    var children: [S3XMLNode]

    func child(_ name: String) -> S3XMLNode? { children.first { $0.name == name } }
    func children(_ name: String) -> [S3XMLNode] { children.filter { $0.name == name } }
    func string(_ name: String) -> String? { child(name)?.text }

    /// Parses a document; nil when it is not well-formed XML.
    static func parse(_ data: Data) -> S3XMLNode? {
        let parser = XMLParser(data: data)
        let builder = TreeBuilder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        guard parser.parse(), let root = builder.root else { return nil }
        return root
    }

    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [S3XMLNode] = []
        var root: S3XMLNode?

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
            stack.append(S3XMLNode(name: local, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            guard let done = stack.popLast() else { return }
            if stack.isEmpty {
                root = done
            } else {
                stack[stack.count - 1].children.append(done)
            }
        }
    }
}

/// Escapes text for an XML element body.
func xmlEscape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.count)
    for ch in text {
        switch ch {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(ch)
        }
    }
    return out
}

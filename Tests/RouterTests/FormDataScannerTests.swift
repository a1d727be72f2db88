import Foundation
import HTTPEdge
import MomentsServer
import NIOCore
import Testing

/// The streaming form-data scanner: whatever the chunking, the same parts and bytes come out.
@Suite("Form-data scanner")
struct FormDataScannerTests {
    struct Part: Equatable { var name: String; var content: [UInt8] }

    /// Feeds `body` in pieces of `size` bytes; returns the parts and whether the end was seen.
    func scan(_ body: [UInt8], boundary: String, size: Int) throws -> ([Part], Bool) {
        var scanner = FormDataScanner(boundary: boundary)
        var parts: [Part] = []
        var offset = 0
        while offset < body.count {
            let piece = ByteBuffer(bytes: body[offset..<min(body.count, offset + size)])
            try scanner.feed(piece) { event in
                switch event {
                case .part(let headers):
                    let disposition = headers.first { $0.name == "content-disposition" }?.value ?? ""
                    parts.append(Part(name: disposition, content: []))
                case .data(let data): parts[parts.count - 1].content += Array(data.readableBytesView)
                case .partEnd, .end: break
                }
            }
            offset += size
        }
        return (parts, scanner.isComplete)
    }

    @Test(arguments: [1, 2, 3, 7, 64, 1000, 1 << 20])
    func chunkingDoesNotMatter(size: Int) throws {
        let boundary = "XyZ-boundary"
        // Content full of near-misses: CRs, CRLF--, and the boundary without its CRLF.
        var file: [UInt8] = Array("\r\r\n\r\n-\r\n--\r\n--XyZ-boundar\r\n--XyZ\r".utf8)
        var random = SystemRandomNumberGenerator()
        file += (0..<5000).map { _ in UInt8.random(in: 0...255, using: &random) }
        file += Array("--XyZ-boundary".utf8)  // not preceded by CRLF: content
        var body: [UInt8] = Array(
            "preamble text\r\n--XyZ-boundary\r\nContent-Disposition: form-data; name=\"quality\"\r\n\r\nhigh\r\n".utf8)
        body += Array(
            "--XyZ-boundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\nContent-Type: video/mp4\r\n\r\n"
                .utf8)
        body += file
        body += Array("\r\n--XyZ-boundary--\r\nepilogue".utf8)
        let (parts, complete) = try scan(body, boundary: boundary, size: size)
        #expect(complete)
        #expect(parts.count == 2)
        #expect(parts.first?.content == Array("high".utf8))
        #expect(parts.last?.content == file)
    }

    @Test func malformedAndUnfinishedBodies() throws {
        #expect(throws: FormDataScanner.Malformed.self) {
            _ = try scan(Array("--B\r\nno colon here\r\n\r\nx\r\n--B--".utf8), boundary: "B", size: 5)
        }
        #expect(throws: FormDataScanner.Malformed.self) {
            _ = try scan(Array("--Bxx".utf8), boundary: "B", size: 100)
        }
        let (_, cut) = try scan(
            Array("--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc".utf8), boundary: "B", size: 4)
        #expect(!cut)
        let (parts, complete) = try scan(Array("--B\r\n\r\nno headers\r\n--B--".utf8), boundary: "B", size: 3)
        #expect(complete && parts.count == 1 && parts[0].content == Array("no headers".utf8))
    }
}

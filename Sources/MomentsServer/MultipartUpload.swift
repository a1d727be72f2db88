import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Logging
import NIOCore
import Requests
import _NIOFileSystem
import Wording

/// Reads a multipart/form-data body as it arrives: the `file` part goes straight to disk in
/// batches (memory stays flat whatever the size), the small text fields are kept. The size limit is
/// enforced while streaming. Any refusal deletes the partial file.
struct MultipartUpload {
    /// The text fields the upload accepts besides `file`.
    static let textFields: Set<String> = ["target_duration", "quality", "aspect", "focus", "include", "exclude"]
    static let maxFieldBytes = 2048
    /// Bytes gathered before one write to disk.
    static let batchBytes = 1 << 20

    struct Result {
        var fileBytes: Int64
        var fields: [String: String]
        var filename: String?
    }

    /// The boundary of a multipart/form-data Content-Type, or a 415/400 problem.
    static func boundary(contentType: String?) throws -> String {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else {
            throw Problem(
                .unsupportedMediaType, code: "not_multipart",
                detail: Say.notMultipart)
        }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                if !value.isEmpty && value.utf8.count <= 200 { return value }
            }
        }
        throw Problem.badRequest("malformed_multipart", Say.noBoundary)
    }

    /// Streams `body` into `path`. Throws a Problem for a malformed body, a missing or empty file,
    /// an unknown or repeated field, or a file over `maxFileBytes` (413, mid-stream).
    /// Bytes a form may carry besides the file's content (part headers, fields, boundaries).
    static let maxOverheadBytes: Int64 = 64 * 1024

    /// `checkSpace` is called with the bytes written so far before each write to disk. Every exit
    /// but success deletes the file at `path`.
    static func receive(
        _ body: RequestBody, boundary: String, to path: String, maxFileBytes: Int64, tooLarge: Requests.Refusal,
        logger: Logger, checkSpace: (Int64) throws -> Void
    ) async throws -> Result {
        var state = ParseState()
        var scanner = FormDataScanner(boundary: boundary)

        do {
            return try await FileSystem.shared.withFileHandle(
                forWritingAt: FilePath(path), options: .newFile(replaceExisting: false)
            ) { handle in
                var offset: Int64 = 0
                var total: Int64 = 0
                for try await chunk in body {
                    total += Int64(chunk.readableBytes)
                    do {
                        try scanner.feed(chunk) { event in state.handle(event) }
                    } catch let malformed as FormDataScanner.Malformed {
                        throw Problem.badRequest(
                            "malformed_multipart", Say.malformedMultipart(malformed.reason))
                    }
                    if let problem = state.problem { throw problem }
                    if state.fileBytes > maxFileBytes { throw tooLarge }
                    if total - state.fileBytes > maxOverheadBytes {
                        throw Problem.badRequest(
                            "malformed_multipart",
                            Say.formTooLarge(kibibytes: Int(maxOverheadBytes / 1024))
                        )
                    }
                    if state.pending.readableBytes >= batchBytes {
                        try checkSpace(offset)
                        offset += Int64(
                            try await handle.write(
                                contentsOf: state.pending.readableBytesView, toAbsoluteOffset: offset))
                        state.pending.clear()
                    }
                }
                if state.pending.readableBytes > 0 {
                    offset += Int64(
                        try await handle.write(contentsOf: state.pending.readableBytesView, toAbsoluteOffset: offset))
                    state.pending.clear()
                }
                guard scanner.isComplete, !state.partOpen else {
                    throw Problem.badRequest(
                        "malformed_multipart",
                        Say.formEndedEarly)
                }
                guard state.sawFile else {
                    throw Problem.badRequest(
                        "missing_file",
                        Say.missingFilePart)
                }
                guard state.fileBytes > 0 else {
                    throw Problem.badRequest(
                        "empty_file", Say.emptyFilePart)
                }
                return Result(fileBytes: state.fileBytes, fields: state.fields, filename: state.filename)
            }
        } catch let problem as Problem {
            try? FileManager.default.removeItem(atPath: path)
            throw problem
        } catch let error as FileSystemError {
            try? FileManager.default.removeItem(atPath: path)
            logger.error("upload could not be stored", metadata: ["error": "\(error)"])
            throw Problem(
                HTTPResponse.Status(code: 507), code: "insufficient_storage",
                detail: Say.uploadNotStored)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            // The connection dropped or the body stream broke: the client went away mid-upload.
            logger.info("upload interrupted", metadata: ["error": "\(error)"])
            throw Problem.badRequest(
                "upload_interrupted", Say.uploadInterrupted)
        }
    }

    /// What the scanner's events build up; one request, one task.
    struct ParseState {
        var currentName: String?
        var inFile = false
        var sawFile = false
        var partOpen = false
        var fileBytes: Int64 = 0
        var fieldBytes: [UInt8] = []
        var fields: [String: String] = [:]
        var filename: String?
        var problem: Problem?
        var pending = ByteBuffer()

        init() { pending.reserveCapacity(MultipartUpload.batchBytes + 64 * 1024) }

        mutating func handle(_ event: FormDataScanner.Event) {
            guard problem == nil else { return }
            switch event {
            case .part(let headers): begin(headers)
            case .data(var chunk): body(&chunk)
            case .partEnd: complete()
            case .end: break
            }
        }

        mutating func begin(_ headers: [(name: String, value: String)]) {
            partOpen = true
            let disposition = headers.first { $0.name == "content-disposition" }?.value ?? ""
            let name = Self.parameter("name", in: disposition)
            currentName = name
            guard let name else {
                fail(.badRequest("malformed_multipart", Say.partWithoutName))
                return
            }
            if name == "file" {
                if sawFile {
                    fail(
                        .badRequest(
                            "duplicate_field", Say.twoFileParts)
                    )
                }
                sawFile = true
                inFile = true
                filename = Self.parameter("filename", in: disposition).flatMap(EditRequest.displayName)
            } else if MultipartUpload.textFields.contains(name) {
                if fields[name] != nil { fail(.badRequest("duplicate_field", Say.fieldTwice(name))) }
                fieldBytes.removeAll(keepingCapacity: true)
            } else {
                fail(
                    .badRequest(
                        "unknown_field",
                        Say.unknownUploadField(name),
                        extensions: ["field": .string(name)]))
            }
        }

        mutating func body(_ chunk: inout ByteBuffer) {
            if inFile {
                fileBytes += Int64(chunk.readableBytes)
                pending.writeBuffer(&chunk)
            } else if let name = currentName {
                if fieldBytes.count + chunk.readableBytes > MultipartUpload.maxFieldBytes {
                    fail(.badRequest("invalid_field", Say.fieldTooLong(name)))
                    return
                }
                fieldBytes.append(contentsOf: chunk.readableBytesView)
            }
        }

        mutating func complete() {
            if !inFile, let name = currentName {
                fields[name] = String(decoding: fieldBytes, as: UTF8.self).trimmingCharacters(
                    in: .whitespacesAndNewlines)
            }
            inFile = false
            partOpen = false
            currentName = nil
        }

        mutating func fail(_ problem: Problem) { if self.problem == nil { self.problem = problem } }

        /// A parameter of a Content-Disposition value (`name="file"` or `name=file`), reading
        /// quoted strings whole, so `filename="a; name=x"` cannot pose as a name.
        static func parameter(_ key: String, in value: String) -> String? {
            var chars = Substring(value)
            // Skip the disposition type.
            guard let firstSemicolon = chars.firstIndex(of: ";") else { return nil }
            chars = chars[chars.index(after: firstSemicolon)...]
            while !chars.isEmpty {
                chars = chars.drop(while: { $0 == " " || $0 == "\t" })
                let nameEnd = chars.firstIndex(where: { $0 == "=" || $0 == ";" }) ?? chars.endIndex
                let name = chars[..<nameEnd].trimmingCharacters(in: .whitespaces).lowercased()
                chars = chars[nameEnd...]
                var parsed = ""
                if chars.first == "=" {
                    chars = chars.dropFirst().drop(while: { $0 == " " })
                    if chars.first == "\"" {
                        chars = chars.dropFirst()
                        var escaped = false
                        while let c = chars.first {
                            chars = chars.dropFirst()
                            if escaped {
                                parsed.append(c); escaped = false
                            } else if c == "\\" {
                                escaped = true
                            } else if c == "\"" {
                                break
                            } else {
                                parsed.append(c)
                            }
                        }
                        chars = chars.drop(while: { $0 != ";" })
                    } else {
                        let end = chars.firstIndex(of: ";") ?? chars.endIndex
                        parsed = chars[..<end].trimmingCharacters(in: .whitespaces)
                        chars = chars[end...]
                    }
                }
                if name == key { return parsed }
                if chars.first == ";" { chars = chars.dropFirst() }
            }
            return nil
        }
    }
}

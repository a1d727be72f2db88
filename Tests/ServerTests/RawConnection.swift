import Foundation
import Testing

/// A plain TCP connection to a live test server, for what an HTTP client library hides: a head
/// sent a piece at a time, a body that stalls, `Expect: 100-continue`, a connection the server
/// closes. Blocking calls run on a thread of their own (`RawConnection.offPool`), never on the
/// pool the server's handlers need.
final class RawConnection: @unchecked Sendable {
    private let fd: Int32
    private var isClosed = false
    /// Bytes received and not yet returned by `readResponse`.
    private var pending: [UInt8] = []

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        // Short receive slices: the read loops below watch their own deadlines.
        var slice = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close() }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Sends everything (false when the server has closed the connection).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    enum ReadOutcome { case data([UInt8]), closed, timedOut }

    /// Waits up to `timeout` seconds for bytes.
    func read(timeout: Double) -> ReadOutcome {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while Date() < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { return .data(Array(buffer.prefix(count))) }
            if count == 0 { return .closed }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
            return .closed
        }
        return .timedOut
    }

    /// Seconds until the server closed the connection (reading and dropping whatever it sends), or
    /// nil when it is still open after `timeout`.
    func secondsUntilClosed(timeout: Double) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            switch read(timeout: timeout - Date().timeIntervalSince(start)) {
            case .closed: return Date().timeIntervalSince(start)
            case .data, .timedOut: continue
            }
        }
        return nil
    }

    struct Response {
        var status: Int
        var head: String
        var body: String
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// The next response (an interim 100 Continue counts as one), or nil if none arrives in time.
    func readResponse(timeout: Double = 10) -> Response? {
        let deadline = Date().addingTimeInterval(timeout)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let end = pending.firstRange(of: separator) {
                let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                var response = Response(status: status, head: head, body: "")
                let length = status < 200 ? 0 : Int(response.header("Content-Length") ?? "0") ?? 0
                if pending.count - end.upperBound >= length {
                    response.body = String(decoding: pending[end.upperBound..<(end.upperBound + length)], as: UTF8.self)
                    pending.removeFirst(end.upperBound + length)
                    return response
                }
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            switch read(timeout: left) {
            case .data(let bytes): pending += bytes
            case .closed, .timedOut: return nil
            }
        }
    }

    /// Runs blocking socket work on a thread of its own.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// The head of an upload whose body is not sent yet.
    static func uploadHead(key: String, contentLength: Int, expectContinue: Bool) -> String {
        "POST /api/v1/upload HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n"
            + "Content-Type: \(Multipart.contentType)\r\nContent-Length: \(contentLength)\r\n"
            + (expectContinue ? "Expect: 100-continue\r\n" : "") + "\r\n"
    }
}

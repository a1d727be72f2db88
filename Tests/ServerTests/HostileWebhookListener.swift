import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Store
import Logging
import Synchronization
import Testing

extension HostileWebhookTests {
    /// A raw TCP listener whose connections are handled on threads of their own (never on the
    /// cooperative pool): it records when each connection came, its first bytes, and when the
    /// other side closed it, and answers as `behaviour` says.
    final class RawListener: @unchecked Sendable {
        enum Behaviour: Sendable {
            /// `200` with `Content-Length: 60000`, then one body byte every `every` seconds.
            case trickleBody(every: Double)
            /// The status line one byte every `every` seconds.
            case trickleHead(every: Double)
            /// Reads what comes (a TLS ClientHello, a request), then closes.
            case recordOnly
        }

        struct Connection: Sendable {
            var accepted: Date
            var firstBytes: [UInt8] = []
            var closedByPeer: Date?
        }

        let fd: Int32
        let port: Int
        let behaviour: Behaviour
        let connections = Mutex<[Connection]>([])
        let stopped = Atomic<Bool>(false)

        /// Listens on `host` (an IPv4 or IPv6 address) and `port` (0: a free one).
        init(host: String, port: Int = 0, behaviour: Behaviour) throws {
            self.behaviour = behaviour
            let v6 = host.contains(":")
            let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw POSIXError(.EMFILE) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var bound: Int32
            if v6 {
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = UInt16(port).bigEndian
                inet_pton(AF_INET6, host, &address.sin6_addr)
                bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                    }
                }
            } else {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = UInt16(port).bigEndian
                inet_pton(AF_INET, host, &address.sin_addr)
                bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            guard bound == 0, listen(fd, 64) == 0 else {
                Glibc.close(fd)
                throw POSIXError(.EADDRINUSE)
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            let portBytes = withUnsafeBytes(of: &storage) { raw -> UInt16 in
                // sin_port and sin6_port are both at offset 2, in network order.
                UInt16(raw[2]) << 8 | UInt16(raw[3])
            }
            self.fd = fd
            self.port = Int(portBytes)
            Thread { [self] in acceptLoop() }.start()
        }

        deinit { stop() }

        func stop() {
            guard !stopped.exchange(true, ordering: .relaxed) else { return }
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }

        var seen: [Connection] { connections.withLock { $0 } }

        private func acceptLoop() {
            while !stopped.load(ordering: .relaxed) {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 200) > 0 else { continue }
                let client = accept(fd, nil, nil)
                if client < 0 { continue }
                let index = connections.withLock { list -> Int in
                    list.append(Connection(accepted: Date()))
                    return list.count - 1
                }
                Thread { [self] in serve(client, index: index) }.start()
            }
        }

        private func serve(_ client: Int32, index: Int) {
            defer { Glibc.close(client) }
            var slice = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &slice, socklen_t(MemoryLayout<timeval>.size))
            // The first bytes: a request head (and its body, read as it comes), or a ClientHello.
            var first: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            let readUntil = Date().addingTimeInterval(1)
            while Date() < readUntil {
                let count = recv(client, &buffer, buffer.count, 0)
                if count > 0 {
                    first += buffer.prefix(count)
                    if case .recordOnly = behaviour, first.count > 5 { break }
                    continue
                }
                if count == 0 { break }
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                    if !first.isEmpty { break } else { continue }
                }
                break
            }
            connections.withLock { $0[index].firstBytes = first }
            let bytes: [UInt8]
            let every: Double
            switch behaviour {
            case .recordOnly:
                return
            case .trickleBody(let interval):
                _ = send(client, Array("HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n".utf8))
                bytes = Array(repeating: UInt8(ascii: "x"), count: 60000)
                every = interval
            case .trickleHead(let interval):
                bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)
                every = interval
            }
            // One byte at a time, watching for the other side closing the connection.
            for byte in bytes {
                let next = Date().addingTimeInterval(every)
                while Date() < next {
                    if stopped.load(ordering: .relaxed) { return }
                    let count = recv(client, &buffer, buffer.count, 0)
                    if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                        connections.withLock { $0[index].closedByPeer = Date() }
                        return
                    }
                }
                if !send(client, [byte]) {
                    connections.withLock { $0[index].closedByPeer = Date() }
                    return
                }
            }
        }

        private func send(_ client: Int32, _ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }
    }
}

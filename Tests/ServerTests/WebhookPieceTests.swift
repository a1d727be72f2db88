import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MomentsConfig
import Store
import Synchronization
import Testing
import Webhooks

/// The webhook machinery's parts on their own: the signature, the address rules, pinned targets,
/// the lookup budget, the retry schedule and the configurable keys.
@Suite("Webhook pieces")
struct WebhookPieceTests {
    /// `t=<unix>,v1=<hex HMAC-SHA256(secret, "t.body")>`, checked against a vector computed apart
    /// (Python's hmac), and the verifier's tolerance.
    @Test func signatureFormat() {
        let header = WebhookSignature.header(
            secret: "whsec_test", timestamp: 1_700_000_000, body: Array(#"{"a":1}"#.utf8))
        #expect(header == "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789")
        let at = Date(timeIntervalSince1970: 1_700_000_100)
        #expect(WebhookSignature.verify(header: header, secret: "whsec_test", body: Array(#"{"a":1}"#.utf8), now: at))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_other", body: Array(#"{"a":1}"#.utf8), now: at))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_test", body: Array(#"{"a":2}"#.utf8), now: at))
        #expect(
            !WebhookSignature.verify(
                header: header, secret: "whsec_test", body: Array(#"{"a":1}"#.utf8),
                now: at.addingTimeInterval(600)), "older than five minutes")
        let secret = WebhookEndpoint.newSecret()
        #expect(secret.hasPrefix("whsec_") && secret.count == 6 + 43 && secret != WebhookEndpoint.newSecret())
    }

    /// The address classifier: what is refused, and what is public.
    @Test func addressClassifier() {
        let refused: [String: String] = [
            "127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback", "10.0.0.1": "private",
            "172.16.5.4": "private",
            "172.31.255.255": "private", "192.168.0.1": "private", "100.64.0.1": "private", "100.127.255.1": "private",
            "169.254.169.254": "link-local", "fe80::1": "link-local", "fc00::1": "private", "fd12:3456::1": "private",
            "0.0.0.0": "unspecified", "::": "unspecified", "224.0.0.1": "multicast", "ff02::1": "multicast",
            "::ffff:10.0.0.1": "private", "::ffff:127.0.0.1": "loopback", "255.255.255.255": "reserved",
            "not an address": "reserved"
        ]
        for (address, kind) in refused { #expect(WebhookTargets.classify(address) == kind, "\(address)") }
        for address in [
            "8.8.8.8", "1.1.1.1", "172.15.0.1", "172.32.0.1", "100.63.255.255", "100.128.0.1", "192.169.0.1",
            "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8"
        ] {
            #expect(WebhookTargets.classify(address) == nil, "\(address) is public")
        }
    }

    /// The whole IANA special-purpose registries (IPv4 and IPv6), each block at its first and last
    /// address and just outside it.
    @Test func specialPurposeRegistry() {
        let blocks: [(first: String, last: String, before: String?, after: String?)] = [
            ("0.0.0.0", "0.255.255.255", nil, "1.0.0.0"),
            ("10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0"),
            ("100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0"),
            ("127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0"),
            ("169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0"),
            ("172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0"),
            ("192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0"),
            ("192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0"),
            ("192.31.196.0", "192.31.196.255", "192.31.195.255", "192.31.197.0"),
            ("192.52.193.0", "192.52.193.255", "192.52.192.255", "192.52.194.0"),
            ("192.88.99.0", "192.88.99.255", "192.88.98.255", "192.88.100.0"),
            ("192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0"),
            ("192.175.48.0", "192.175.48.255", "192.175.47.255", "192.175.49.0"),
            ("198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0"),
            ("198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0"),
            ("203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0"),
            ("224.0.0.0", "255.255.255.255", "223.255.255.255", nil),
            ("::", "::", nil, nil),
            ("::1", "::1", nil, nil),
            ("::ffff:0:0:0", "::ffff:0:ffff:ffff", nil, nil),
            ("64:ff9b::", "64:ff9b::ffff:ffff", nil, nil),
            ("64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("100::", "100::ffff:ffff:ffff:ffff", nil, nil),
            ("2001::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", nil, "2001:200::"),
            (
                "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
                "2001:db9::"
            ),
            ("2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2003::"),
            ("3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil),
            ("fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil)
        ]
        for block in blocks {
            #expect(SpecialPurposeAddresses.classify(block.first) != nil, "\(block.first)")
            #expect(SpecialPurposeAddresses.classify(block.last) != nil, "\(block.last)")
            if let before = block.before {
                #expect(SpecialPurposeAddresses.classify(before) == nil, "\(before) is public")
            }
            if let after = block.after { #expect(SpecialPurposeAddresses.classify(after) == nil, "\(after) is public") }
        }
        let kinds: [String: String] = [
            "192.0.2.10": "documentation", "198.51.100.1": "documentation", "203.0.113.200": "documentation",
            "2001:db8::1": "documentation", "3fff::1": "documentation", "198.18.3.4": "benchmarking",
            "198.19.0.1": "benchmarking",
            "::ffff:0:127.0.0.1": "reserved", "64:ff9b::808:808": "reserved", "64:ff9b:1::a00:1": "reserved",
            "2002:808:808::1": "reserved", "2001::1": "reserved", "100::1": "reserved",
            "::ffff:192.0.2.1": "documentation",
            "::ffff:0.0.0.0": "unspecified", "::8.8.8.8": "reserved", "5f00::1": "reserved",
            "2620:4f:8000::1": "reserved",
            "fec0::1": "private", "4000::1": "reserved", "1234::1": "reserved"
        ]
        for (address, kind) in kinds { #expect(SpecialPurposeAddresses.classify(address) == kind, "\(address)") }
        // Public neighbours.
        for address in [
            "2001:200::1", "2620:4f:8001::1", "2400:cb00::1", "2a00:1450:4001::1", "3ffe::1", "::ffff:1.1.1.1",
            "192.0.1.1", "192.31.197.1", "198.20.0.1", "223.255.255.255"
        ] {
            #expect(SpecialPurposeAddresses.classify(address) == nil, "\(address) is public")
        }
    }

    /// The connection goes to the address that was checked (the HTTP client's DNS override pins
    /// the name to it), while the URL — its Host header, its TLS server name — stays as written;
    /// a URL naming an address in standard form needs no override.
    @Test func targetsArePinnedToTheCheckedAddress() async throws {
        let checker = WebhookTargetChecker(allowPrivate: true, budget: WebhookLookupBudget())
        let target = try await checker.check("http://localhost:8080/a/b?c=d", account: "acct")
        #expect(target.addresses.allSatisfy { WebhookTargets.classify($0) == "loopback" } && !target.addresses.isEmpty)
        #expect(target.url == "http://localhost:8080/a/b?c=d" && target.host == "localhost")
        #expect(target.dnsOverride == ["localhost": target.pinned])
        let secure = try await checker.check("https://127.0.0.1/x", account: "acct")
        #expect(secure.url == "https://127.0.0.1/x" && secure.dnsOverride.isEmpty && secure.pinned == "127.0.0.1")
        let v6 = try await checker.check("https://[::1]:8443/x", account: "acct")
        #expect(v6.host == "::1" && v6.dnsOverride.isEmpty && v6.pinned == "::1")
        // A numeric form the client would resolve itself is pinned too.
        let decimal = try await checker.check("http://2130706433:9/x", account: "acct")
        #expect(decimal.dnsOverride == ["2130706433": "127.0.0.1"])
    }

    /// Lookups beyond an account's share are refused at once (the account is told to try again);
    /// other accounts keep theirs; a finished lookup gives its share back.
    @Test func lookupBudgetIsPerAccount() async throws {
        let gate = LookupGate()
        defer { gate.open() }
        let network = WebhookNetwork(resolve: { _ in
            while !gate.isOpen { Thread.sleep(forTimeInterval: 0.01) }
            return ["93.184.215.14"]
        })
        // A long lookup deadline: under load the lookups held here must not end on their own.
        let budget = WebhookLookupBudget(total: 3, perAccount: 2, deadline: .seconds(120))
        let checker = WebhookTargetChecker(allowPrivate: false, network: network, budget: budget)
        let held = (0..<2).map { n in Task { try await checker.check("https://slow\(n).example.net/", account: "a") } }
        // Each wait ends as soon as the lookups are held; the deadline is only a safety net (the unit
        // tier's media suites can keep both cores busy for seconds).
        let deadline = Date().addingTimeInterval(60)
        while budget.waiting < 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        await #expect(throws: WebhookTargetRefusal.self) {
            try await checker.check("https://third.example.net/", account: "a")
        }
        let other = Task { try await checker.check("https://other.example.net/", account: "b") }
        while budget.waiting < 3 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        do {
            _ = try await checker.check("https://fourth.example.net/", account: "c")
            Issue.record("the total was exceeded")
        } catch {
            #expect(error.code == "webhook_lookup_busy" && error.detail.contains("many"), "\(error)")
        }
        gate.open()
        for task in held { #expect(try await task.value.pinned == "93.184.215.14") }
        #expect(try await other.value.pinned == "93.184.215.14")
        #expect(budget.waiting == 0)
        #expect(try await checker.check("https://again.example.net/", account: "a").addresses == ["93.184.215.14"])
    }

    /// A lookup given up at its deadline frees its slot at once, but its thread counts against
    /// the account until the resolver returns: an account whose names hang in the resolver is
    /// refused once its threads are used up, while another account is not.
    @Test func givenUpLookupsCountAgainstTheirAccountUntilTheResolverReturns() async throws {
        let gate = LookupGate()
        defer { gate.open() }
        let network = WebhookNetwork(resolve: { host in
            if host.hasPrefix("slow") {
                while !gate.isOpen { Thread.sleep(forTimeInterval: 0.01) }
                throw POSIXError(.ETIMEDOUT)
            }
            return ["93.184.215.14"]
        })
        let budget = WebhookLookupBudget(total: 8, perAccount: 2, threadsPerAccount: 3, deadline: .milliseconds(200))
        let checker = WebhookTargetChecker(allowPrivate: false, network: network, budget: budget)
        for n in 0..<3 {
            do {
                _ = try await checker.check("https://slow\(n).example.net/", account: "a")
                Issue.record("a hanging name resolved")
            } catch {
                #expect(error.code == "webhook_lookup_timeout" && error.detail.contains("0.2 seconds"), "\(error)")
            }
        }
        #expect(budget.waiting == 0 && budget.inResolver == 3)
        do {
            _ = try await checker.check("https://fine.example.net/", account: "a")
            Issue.record("the account's threads were all in use")
        } catch {
            #expect(error.code == "webhook_lookup_busy" && error.detail.contains("This account"), "\(error)")
        }
        #expect(try await checker.check("https://fine.example.net/", account: "b").pinned == "93.184.215.14")
        gate.open()
        #expect(try await waitFor(5) { budget.inResolver == 0 })
        #expect(try await checker.check("https://fine.example.net/", account: "a").pinned == "93.184.215.14")
    }

    /// Retries back off exponentially (capped at an hour) and stop 24 h after the event.
    @Test func retrySchedule() {
        let created = Date(timeIntervalSince1970: 1_000_000)
        #expect(
            WebhookSchedule.nextAttempt(after: 1, base: 10, createdAt: created, now: created)
                == created.addingTimeInterval(10))
        #expect(
            WebhookSchedule.nextAttempt(after: 4, base: 10, createdAt: created, now: created)
                == created.addingTimeInterval(80))
        #expect(
            WebhookSchedule.nextAttempt(after: 20, base: 10, createdAt: created, now: created)
                == created.addingTimeInterval(3600))
        let late = created.addingTimeInterval(23.5 * 3600)
        #expect(
            WebhookSchedule.nextAttempt(after: 20, base: 10, createdAt: created, now: late) == nil,
            "past 24 h: given up")
    }

    /// The `webhooks.*` keys come from the environment, and Config/moments.json holds their defaults.
    @Test func webhookKeysAreConfigurable() async throws {
        let reader = try await MomentsConfiguration.reader(
            environment: [
                "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true", "WEBHOOKS_RETRY_BACKOFF_SECONDS": "2.5",
                "WEBHOOKS_POLL_SECONDS": "0.5"
            ], file: "/nonexistent/moments.json")
        let settings = ServiceSettings(reader: reader).webhooks
        #expect(settings.allowPrivateTargets && settings.retryBackoffSeconds == 2.5 && settings.pollSeconds == 0.5)
        let shipped = ServiceSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json")
        ).webhooks
        #expect(shipped == WebhookSettings())
        #expect(!shipped.allowPrivateTargets && shipped.retryBackoffSeconds == 10 && shipped.pollSeconds == 5)
    }
}

/// Holds the stand-in resolvers until the test opens it.
private final class LookupGate: Sendable {
    let raised = Atomic<Bool>(false)
    var isOpen: Bool { raised.load(ordering: .relaxed) }
    func open() { raised.store(true, ordering: .relaxed) }
}

/// Polls `condition` until it holds or `timeout` seconds pass; whether it held.
private func waitFor(_ timeout: Double, _ condition: () -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return condition()
}

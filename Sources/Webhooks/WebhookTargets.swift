import Foundation
import Store
import Wording

/// Why a webhook URL is refused, in words for its owner (the HTTP layer shows `detail`; the
/// dispatcher logs it as the attempt's error). Never names a resolved address or what an internal
/// name resolves to.
public struct WebhookTargetRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// invalid_webhook_url, webhook_https_required, webhook_private_target (an address written in
    /// the URL), webhook_unresolvable (a host name that does not resolve to public addresses
    /// only), webhook_lookup_timeout (the host name did not resolve within the lookup deadline),
    /// webhook_lookup_busy (transient: too many lookups at once, in all or for the account)
    public var code: String
    public var detail: String
    public var description: String { detail }
}

/// A URL that passed the checks, with the addresses its host resolved to.
public struct WebhookTarget: Sendable, Equatable {
    public var url: String
    /// The URL's host as the HTTP client reads it (brackets of an IPv6 literal removed).
    public var host: String
    /// The addresses the host resolved to (all allowed).
    public var addresses: [String]
    /// The address the delivery connects to: the first one checked. The request keeps its URL
    /// (Host header and TLS server name stay the URL's host, and the certificate is checked against
    /// it); only the connection goes to this address, so a second DNS answer cannot send it
    /// elsewhere.
    public var pinned: String { addresses[0] }
    /// The HTTP client's DNS override that pins the connection (empty when the URL names an
    /// address the client takes as it is).
    public var dnsOverride: [String: String]
}

/// What a webhook may be sent to: http(s) URLs of at most 2 KB without credentials, whose host
/// resolves only to public addresses (unless `webhooks.allowPrivateTargets`); https required
/// unless `allowPrivateTargets`.
public enum WebhookTargets {
    public static let maxURLLength = 2048

    /// The URL's form alone (no DNS): scheme, length, host, no credentials. The host is the one the
    /// HTTP client will connect to (Foundation's URL, as the client reads it).
    static func parse(_ text: String, allowPrivate: Bool) throws(WebhookTargetRefusal) -> (URLComponents, String) {
        guard text.utf8.count <= maxURLLength else {
            throw WebhookTargetRefusal(
                code: "invalid_webhook_url",
                detail: Say.webhookURLTooLong(limit: maxURLLength))
        }
        let malformed = WebhookTargetRefusal(
            code: "invalid_webhook_url",
            detail: Say.webhookURLMalformed
        )
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let componentsHost = components.host.map(unbracketed), !componentsHost.isEmpty,
            let clientHost = URL(string: text)?.host.map(unbracketed), clientHost == componentsHost
        else {
            throw malformed
        }
        guard scheme == "https" || scheme == "http" else {
            throw WebhookTargetRefusal(code: "invalid_webhook_url", detail: Say.webhookURLScheme)
        }
        guard scheme == "https" || allowPrivate else {
            throw WebhookTargetRefusal(
                code: "webhook_https_required",
                detail: Say.webhookHTTPSRequired)
        }
        guard components.user == nil, components.password == nil else {
            throw WebhookTargetRefusal(
                code: "invalid_webhook_url",
                detail:
                    Say.webhookURLCredentials
            )
        }
        return (components, clientHost)
    }

    static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// The address classifier of the special-purpose registry (kept here for callers of old).
    public static func classify(_ address: String) -> String? { SpecialPurposeAddresses.classify(address) }
}

/// Checks webhook URLs: their form, then their host's addresses (looked up within the lookup
/// budget, on a thread of its own). Registration and every delivery attempt use it.
public struct WebhookTargetChecker: Sendable {
    public var allowPrivate: Bool
    public var network: WebhookNetwork
    public var budget: WebhookLookupBudget

    public init(allowPrivate: Bool, network: WebhookNetwork = .system, budget: WebhookLookupBudget = .shared) {
        self.allowPrivate = allowPrivate; self.network = network; self.budget = budget
    }

    static let unreachable = WebhookTargetRefusal(
        code: "webhook_unresolvable",
        detail:
            Say.webhookUnreachable
    )

    /// Parses and checks `text` for `account` (whose share of the lookup budget it uses).
    public func check(_ text: String, account: String) async throws(WebhookTargetRefusal) -> WebhookTarget {
        let (_, host) = try WebhookTargets.parse(text, allowPrivate: allowPrivate)
        let addresses: [String]
        let literal = SystemResolver.numeric(host)
        if let literal {
            addresses = [literal]
        } else {
            do {
                addresses = try await network.lookup(host, account: account, budget: budget)
            } catch {
                switch error {
                case .serverBusy:
                    throw WebhookTargetRefusal(
                        code: "webhook_lookup_busy",
                        detail:
                            Say.webhookLookupsBusy)
                case .accountBusy:
                    throw WebhookTargetRefusal(
                        code: "webhook_lookup_busy",
                        detail:
                            Say.webhookAccountLookupsBusy
                    )
                case .timedOut:
                    throw WebhookTargetRefusal(
                        code: "webhook_lookup_timeout",
                        detail:
                            Say.webhookLookupTimedOut(within: AttemptDeadline(budget.deadline).spoken)
                    )
                case .cancelled:
                    throw WebhookTargetRefusal(
                        code: "webhook_lookup_timeout",
                        detail:
                            Say.webhookLookupCancelled
                    )
                case .failed:
                    throw Self.unreachable
                }
            }
        }
        guard !addresses.isEmpty else { throw Self.unreachable }
        if !allowPrivate {
            for address in addresses {
                guard let kind = network.classify(address) else { continue }
                // An address written in the URL is the owner's own: saying what it is tells
                // nothing. What a name resolves to is not said (it may be internal DNS).
                if literal != nil {
                    throw WebhookTargetRefusal(
                        code: "webhook_private_target",
                        detail:
                            Say.webhookPrivateAddress(kind)
                    )
                }
                throw Self.unreachable
            }
        }
        var override: [String: String] = [:]
        // A name (or a numeric form the client would resolve itself, like "2130706433") connects
        // to the checked address; an address in standard form is taken as it is.
        if SpecialPurposeAddresses.bytes(host) == nil { override[host] = addresses[0] }
        return WebhookTarget(url: text, host: host, addresses: addresses, dnsOverride: override)
    }
}

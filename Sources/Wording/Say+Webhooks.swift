/// Webhooks: registering an endpoint, and why a URL is refused.
extension Say {
    public static func webhookURLTooLong(limit: Int) -> String { "The webhook URL is longer than \(limit) bytes; use a shorter one." }
    public static let webhookURLMalformed =
        "The webhook URL must be an absolute http or https URL such as https://example.com/moments-webhook."
    public static let webhookURLScheme = "The webhook URL must start with https://."
    public static let webhookHTTPSRequired = "Webhooks are sent only over https: use an https:// URL for your endpoint."
    public static let webhookURLCredentials =
        "The webhook URL must not contain a user name or password; verify deliveries with the Moments-Signature header instead."
    public static let webhookUnreachable =
        "The webhook URL's host could not be reached: it must resolve in public DNS to public internet addresses only. Check the URL's spelling and the host's DNS records, then try again."
    public static let webhookLookupsBusy = "The server is checking many webhook addresses at the moment. Try again in a few seconds."
    public static let webhookAccountLookupsBusy =
        "This account is checking several slow webhook addresses at the moment. Try again in a few seconds, with a host name that resolves quickly."
    public static func webhookLookupTimedOut(within deadline: String) -> String {
        "The webhook URL's host name did not resolve within \(deadline). Check that its DNS servers answer promptly (or use a host name that resolves quickly), then try again."
    }
    public static let webhookLookupCancelled =
        "The webhook URL's host name could not be looked up in time. Check that its DNS servers answer promptly, then try again."
    public static func webhookPrivateAddress(_ kind: String) -> String {
        "The webhook URL names a \(kind) address; webhooks go only to public internet addresses. Use a publicly reachable https URL."
    }
    public static let webhookBodyNotAnObject = "The body must be a JSON object such as {\"url\": \"https://example.com/moments-webhook\"}."
    public static let webhookURLMissing = "\"url\" is required: the https URL Moments should POST job events to."
    public static let webhookSecretShownOnce =
        "Keep this secret: it is shown only now. Verify each delivery's Moments-Signature header with it; PUT again to rotate it."
    public static let noWebhook =
        "This account has no webhook endpoint. Register one with PUT /api/v1/account/webhook {\"url\": \"https://…\"}."

    /// A timeline export's title.
    public static func timelineTitle(_ jobID: String) -> String { "Moments highlight \(jobID)" }
    public static let invalidTimelineFormat = "format must be fcpxml, otio or edl."
    public static let revokedAPIKeyForLinks = "This API key was revoked. Use another key of your account."
    public static let keyShownOnce = "Keep this API key: it is shown only now. Send it as \"Authorization: Bearer <api_key>\"."
    public static let accountFields = "Accounts accept only \"label\"."
    public static let keyFields = "Keys accept only \"label\"."
    public static let webhookFields = "The webhook accepts only \"url\"."
    // A delivery's failure, as the endpoint's owner reads it in the delivery log.
    public static func webhookRedirected(status: Int) -> String { "redirects are not followed (answered \(status))" }
    public static func webhookNoAnswer(within deadline: String) -> String {
        "the endpoint could not be reached: no answer within \(deadline)"
    }
    public static let webhookClosed = "the endpoint closed the connection without answering"
    public static let webhookRefusedConnection = "the endpoint could not be reached: the connection was refused"
    public static let webhookTLSFailed = "the TLS handshake failed (is the endpoint's certificate valid for its host name?)"
    public static let webhookUnreachableEndpoint =
        "the endpoint could not be reached; check that it accepts https connections from the internet"
    public static let webhookSecretSealedElsewhere =
        "the endpoint's signing secret was sealed under another server secret (set the same security.serverSecret on every process)"
}

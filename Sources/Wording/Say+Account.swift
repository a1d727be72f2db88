/// Accounts, API keys, devices and subscriptions.
extension Say {
    public static func tooManyKeys(limit: Int) -> String {
        "This account already has \(limit) active API keys. Revoke one you no longer use (DELETE /api/v1/account/keys/{id}) first."
    }
    public static let accountGone = "This account no longer exists."
    public static let lastActiveKey =
        "This is the account's only active API key; revoking it would lock the account out. Create a new key with POST /api/v1/account/keys first, then revoke this one."
    public static func keyNotFound(_ id: String) -> String { "There is no API key \(id) on this account. List your keys with GET /api/v1/account/keys." }
    public static func labelBodyNotAnObject(example: String) -> String {
        "The body must be a JSON object such as {\"label\": \"\(example)\"}, or empty."
    }
    /// "Unknown field "x". <what is accepted>"
    public static func unknownField(_ name: String, accepted: String) -> String { "Unknown field \"\(name)\". \(accepted)" }
    public static let invalidLabel = "\"label\" must be a string of at most 100 characters."
    public static let tooManyAccounts =
        "Too many accounts were created from your address in the last hour. Keep using the API key you have, or try again later."
    public static let accountBodyNotJSON =
        "Send the body as JSON with \"Content-Type: application/json\" (for example {\"label\": \"my phone\"}), or send no body."
    public static let missingAPIKey =
        "This endpoint needs an API key: send \"Authorization: Bearer <api_key>\". Create an account with POST /api/v1/accounts to get one."
    public static let invalidAuthorization = "The Authorization header must be \"Bearer <api_key>\"."
    public static let invalidAPIKey = "The API key is not valid. Check it, or create an account with POST /api/v1/accounts."
    public static let revokedAPIKey =
        "This API key was revoked. Use another key of your account, or create one with POST /api/v1/account/keys using a key that still works."
    public static let accountDisabled = "This account is disabled; contact support."
    // Devices (push notifications).
    public static let pushUnavailable =
        "This server sends no push notifications (it has no APNs key). Follow your jobs with GET /api/v1/jobs/{id}/events or a webhook."
    public static let deviceBodyTooLarge = "A device registration is a small JSON object such as {\"environment\": \"production\"}."
    public static let deviceBodyNotAnObject = "The body must be a JSON object such as {\"environment\": \"production\"}."
    public static let deviceUnknownField = "A device registration accepts only \"environment\"."
    public static let invalidPushEnvironment =
        "\"environment\" must be \"production\" (App Store and TestFlight builds) or \"sandbox\" (development builds)."
    public static func tooManyDevices(limit: Int) -> String {
        "This account has \(limit) devices, the most it may have. Remove one with DELETE /api/v1/account/devices/{token} first."
    }
    public static let deviceNotFound = "This account has no such device. List its devices with GET /api/v1/account/devices."
    public static let invalidDeviceToken =
        "A device token is the 64 hexadecimal characters of the token APNs gave the app (32 bytes in hex)."
    // Subscriptions (the App Store).
    public static let appStoreUnavailable =
        "App Store verification is not configured on this server, so subscriptions cannot be checked now. Try again later."
    public static func jwsBodyNotAnObject(field: String) -> String { "The body must be a JSON object: {\"\(field)\": \"<JWS>\"}." }
    public static func missingStringField(_ name: String) -> String { "The body has no \"\(name)\" string." }
    /// `reason`: the verifier's clause (which certificate, which field), naming no path or key.
    public static func signedPayloadRefused(_ what: String, because reason: String) -> String {
        "The signed \(what) was refused: \(reason). Send the JWS exactly as StoreKit or the App Store produced it."
    }
    public static func unknownProduct(_ product: String, known: String) -> String {
        "The transaction is for \(product); this server grants plans for \(known) only."
    }
    public static let purchaseForAnotherAccount =
        "This purchase was made for another account (its appAccountToken is not this account's id). Sign in to the account that bought it."
    public static func sandboxPurchase(environment: String) -> String {
        "This purchase was made in Apple's \(environment) environment (TestFlight or a development build), which unlocks pro only for test accounts. Buy pro in the App Store version of the app, or ask support to mark this account as a tester."
    }
    public static let subscriptionOfAnotherAccount =
        "This subscription is already attached to another account. Sign in to that account, or contact support."
}

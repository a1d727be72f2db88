/// The server's own room: storage, the sandbox, busy moments, errors it cannot explain.
extension Say {
    static let keepsWhatItHas = "; the upload keeps what it has"

    public static let insufficientStorage =
        "The server is low on storage space and cannot take this upload now. Try again later."
    public static let uploadNotStored = "The server could not store the upload. Try again later."
    public static let storageUnavailable =
        "The server cannot reach its media storage right now. Try again in a minute."
    /// A job or upload the server cannot process safely (its sandbox is incomplete): nothing of
    /// the user's is lost or charged, the operator is told by the log and /ready.
    public static let processingUnavailable =
        "The server cannot process videos right now: its operator has been told. Nothing was charged; try again later."
    public static let notReady = "The server cannot take work now; try again shortly."

    public static func serverBusy(resumable: Bool) -> String {
        "The server is receiving as many uploads as it can right now. Try again in a minute"
            + (resumable ? keepsWhatItHas : "") + "."
    }

    public static func tooManyUploads(limit: Int, resumable: Bool) -> String {
        "Your account is already sending \(count(limit, "upload")) at once. "
            + "Wait for one to finish, then send this one" + (resumable ? keepsWhatItHas : "") + "."
    }

    public static let internalError =
        "Something went wrong on the server. Please try again; if it keeps happening, report the request_id of this answer."
    public static let requestNotProcessed =
        "The request could not be processed. Check it against the API description at /openapi.json and try again."
    public static func noEndpoint(method: String) -> String {
        "There is no endpoint \(method) at this path (the `instance` member). The API is described at /openapi.json."
    }
    public static let bodyTooLarge = "The request body is too large for this endpoint."
    public static let crossSite =
        "This request was sent by a page of another web site, and such requests cannot change anything here. Call the API from your own app or server with an API key (no Origin header), or use the Moments studio on this service's own address."
    public static let metricsToken =
        "This server's metrics need its metrics token: send \"Authorization: Bearer <token>\"."
    public static func missingFromBuild(_ what: String) -> String { "The \(what) is missing from this build." }
    public static let noStudioFile = "There is no studio file of that name."
    public static func invalidQuery(_ name: String, from lower: Int, to upper: Int) -> String {
        "\(name) must be a whole number from \(lower) to \(upper)."
    }

    public static func notTheExpectedJSON(_ fault: String) -> String { "The request body is not the JSON this endpoint expects: \(fault)" }
    public static func methodNotAllowed(_ method: String) -> String {
        "\(method) is not allowed at this path (the `instance` member). The API is described at /openapi.json."
    }
    public static func fieldMissing(_ name: String) -> String { "the field \"\(name)\" is missing." }
    public static func fieldOfWrongType(_ name: String) -> String { "the field \"\(name)\" has the wrong type." }
}

import Configuration
import Foundation

/// The HTTP service's settings. Each key's default is the value written here and in
/// Config/moments.json; the environment variable that overrides it is in the comment.
public struct ServiceSettings: Sendable, Equatable {
    /// `http.host` / HTTP_HOST
    public var host = "127.0.0.1"
    /// `http.port` / HTTP_PORT
    public var port = 8000
    /// `http.publicBaseUrl` / HTTP_PUBLIC_BASE_URL: the origin put in result_url and links
    /// (e.g. https://api.moments.app). Empty: http://HOST:PORT.
    public var publicBaseURL = ""
    /// `http.maxConnections` / HTTP_MAX_CONNECTIONS: open connections at most; one over the cap is
    /// closed as soon as it is accepted (0 = no cap).
    public var maxConnections = 1000
    /// `http.idleTimeoutSeconds` / HTTP_IDLE_TIMEOUT_SECONDS: a connection with nothing to read or
    /// write for this long (an idle keep-alive, or a request that stopped arriving) is closed (0 = never).
    public var idleTimeoutSeconds = 60.0
    /// `http.headerTimeoutSeconds` / HTTP_HEADER_TIMEOUT_SECONDS: a request head must be complete this
    /// long after its first byte arrives, or the connection is closed (slowloris; 0 = no limit).
    public var headerTimeoutSeconds = 10.0
    /// `http.readyCacheSeconds` / HTTP_READY_CACHE_SECONDS: GET /ready answers from a check at most
    /// this old, so calling it often writes nothing (0 = check on every call).
    public var readyCacheSeconds = 5.0
    /// `http.trustedProxies` / HTTP_TRUSTED_PROXIES (comma-separated): CIDR ranges of reverse proxies
    /// whose X-Forwarded-For is believed, e.g. ["10.0.0.0/8", "::1/128"]. Empty: the TCP peer is the client.
    public var trustedProxies: [String] = []
    /// `http.eventsHeartbeatSeconds` / HTTP_EVENTS_HEARTBEAT_SECONDS: a job's event stream
    /// (GET /api/v1/jobs/{id}/events) sends a comment line when nothing else was sent for this
    /// long, so proxies and clients keep the connection open.
    public var eventsHeartbeatSeconds = 15.0
    /// `storage.path` / STORAGE_PATH: database, uploads, results and the analysis cache.
    public var storagePath = "Storage"
    /// `storage.minFreeBytes` / STORAGE_MIN_FREE_BYTES: uploads are refused (507) and /ready fails
    /// when the storage volume would have less than this free.
    public var minFreeBytes: Int64 = 1 << 30
    /// `storage.keepUploads` / STORAGE_KEEP_UPLOADS: keep the uploaded original after processing.
    public var keepUploads = false
    /// `storage.resultRetentionHours` / STORAGE_RESULT_RETENTION_HOURS: results are deleted this
    /// long after their job finished.
    public var resultRetentionHours = 168.0
    /// `storage.sweepIntervalSeconds` / STORAGE_SWEEP_INTERVAL_SECONDS: how often the sweeper runs.
    public var sweepIntervalSeconds = 600.0
    /// `storage.backend` and `storage.s3.*`: where job media are kept (see MediaStorageSettings).
    public var mediaStorage = MediaStorageSettings()
    /// `database.url` / DATABASE_URL: the store. Empty: SQLite at `<storage.path>/moments.sqlite`;
    /// `sqlite:PATH` or a plain path: SQLite there; `postgres://user:password@host:port/db?sslmode=…`:
    /// PostgreSQL, shared by any number of API and worker processes on any hosts.
    public var databaseURL = ""
    /// `jobs.workers` / JOBS_WORKERS: jobs processed at the same time by this process (0: none, an
    /// API-only process; `moments worker` processes do the work).
    public var workers = 1
    /// `jobs.leaseSeconds` / JOBS_LEASE_SECONDS: a claimed job's lease. Its worker renews it every
    /// third of this; once it has expired (the worker's process or host is gone) any process's
    /// rescuer puts the job back in the queue.
    public var leaseSeconds = 30.0
    /// `jobs.maxAttempts` / JOBS_MAX_ATTEMPTS: a job interrupted this many times (crashes) fails.
    public var maxAttempts = 3
    /// `jobs.niceness` / JOBS_NICENESS: scheduling niceness of the job children's threads, so the API
    /// stays responsive while jobs run (0 = same priority as the API). Upload probes run at 0.
    public var niceness = 19
    /// `jobs.progressIntervalMs` / JOBS_PROGRESS_INTERVAL_MS: least time between progress writes.
    public var progressIntervalMs = 250
    /// `jobs.executable` / JOBS_EXECUTABLE: the `moments` binary run as the isolated child that
    /// parses uploads (`moments job-exec`). Empty: this process's own executable.
    public var childExecutable = ""
    /// `jobs.childMemoryBytes` / JOBS_CHILD_MEMORY_BYTES: address space of each isolated child
    /// (probe and job); a child that needs more fails (out of memory) instead of the server.
    public var childMemoryBytes: Int64 = 4 << 30
    /// `isolation.childUsers` / ISOLATION_CHILD_USERS: the uids children run as, "FIRST-LAST"
    /// (each child a uid of its own while it runs; no account needs to exist for them). A value
    /// that is no such range keeps the default.
    public var childUsers = "59000-59255"
    /// `isolation.allowWeaker` / ISOLATION_ALLOW_WEAKER: sandbox layers a child may start without
    /// (`user`, `landlock`, `cgroup`), for development machines only. Empty: a child whose sandbox
    /// is incomplete is not started, its job fails with an operator error, and /ready says so.
    public var allowWeakerIsolation: [String] = []
    /// `security.serverSecret` / SECURITY_SERVER_SECRET: the secret media links are signed with and
    /// webhook signing secrets are sealed under (32 characters or more). Empty: a random one kept
    /// in the storage (`server.secret`, 0600), which is enough for one host; processes on several
    /// hosts must all be given the same one.
    public var serverSecret = ""
    /// `jobs.timeBudgetSeconds` / JOBS_TIME_BUDGET_SECONDS and `jobs.timeBudgetPerVideoSecond` /
    /// JOBS_TIME_BUDGET_PER_VIDEO_SECOND: a job's child is killed after this base plus this much per
    /// second of video (the plan's longest when the header claims more), and the job fails.
    public var timeBudgetSeconds = 120.0
    public var timeBudgetPerVideoSecond = 4.0
    /// `jobs.retryBackoffSeconds` / JOBS_RETRY_BACKOFF_SECONDS: a job that failed for a transient
    /// reason waits this long before its next attempt, doubling with each attempt (at most 1 h).
    public var retryBackoffSeconds = 15.0
    /// `upload.maxBytes` / UPLOAD_MAX_BYTES: largest upload, enforced while it streams (413).
    public var maxUploadBytes: Int64 = 4 << 30
    /// `upload.maxConcurrent` / UPLOAD_MAX_CONCURRENT: upload bodies received at once by the whole
    /// server; one more is refused (503 with Retry-After) before its body is read (0 = no cap).
    public var maxConcurrentUploads = 16
    /// `upload.maxConcurrentPerAccount` / UPLOAD_MAX_CONCURRENT_PER_ACCOUNT: upload bodies (plain
    /// uploads and resumable appends) one account may have received at once; one more is refused
    /// (429 with Retry-After) before its body is read. 0 = a quarter of `upload.maxConcurrent`
    /// (at least 1); -1 = no per-account cap.
    public var maxConcurrentUploadsPerAccount = 0
    /// `http.maxEventStreamsPerAccount` / HTTP_MAX_EVENT_STREAMS_PER_ACCOUNT: job event streams
    /// one account may have open at once in this process (429 beyond; 0 = no cap).
    public var maxEventStreamsPerAccount = 8
    /// `upload.minBytesPerSecond` / UPLOAD_MIN_BYTES_PER_SECOND and `upload.stallSeconds` /
    /// UPLOAD_STALL_SECONDS: a request body that brings fewer than minBytesPerSecond × stallSeconds
    /// bytes in any stallSeconds window is cut off (connection closed, partial file deleted).
    /// 0 for either turns the check off.
    public var minUploadBytesPerSecond = 1024
    public var uploadStallSeconds = 30.0
    /// `upload.resumableExpiryHours` / UPLOAD_RESUMABLE_EXPIRY_HOURS: a resumable upload (tus, IETF)
    /// that received no byte for this long expires: its bytes are deleted (Upload-Expires).
    public var resumableExpiryHours = 24.0
    /// `upload.maxDurationSeconds` / UPLOAD_MAX_DURATION_SECONDS: longest accepted video.
    public var maxDurationSeconds = 3600.0
    /// `upload.minTargetDuration` / UPLOAD_MIN_TARGET_DURATION and `upload.maxTargetDuration` /
    /// UPLOAD_MAX_TARGET_DURATION: the accepted target_duration range in seconds.
    public var minTargetDuration = 5
    public var maxTargetDuration = 180
    /// `upload.defaultTargetDuration` / UPLOAD_DEFAULT_TARGET_DURATION
    public var defaultTargetDuration = 30

    /// `accounts.maxPerAddressPerHour` / ACCOUNTS_MAX_PER_ADDRESS_PER_HOUR: sign-ups per client
    /// address per hour (0 = no limit).
    public var accountsPerAddressPerHour = 10

    /// `webhooks.*`: signed webhooks (see WebhookSettings).
    public var webhooks = WebhookSettings()
    /// `apns.*`: push notifications to the account's phones (see PushSettings).
    public var push = PushSettings()

    public init() {}

    public init(reader config: ConfigReader) {
        let http = config.scoped(to: "http")
        http.read("host", into: &host)
        http.read("port", into: &port)
        http.read("publicBaseUrl", into: &publicBaseURL)
        http.read("maxConnections", into: &maxConnections, in: 0...Int.max)
        http.read("idleTimeoutSeconds", into: &idleTimeoutSeconds, in: 0...Double.infinity)
        http.read("headerTimeoutSeconds", into: &headerTimeoutSeconds, in: 0...Double.infinity)
        http.read("readyCacheSeconds", into: &readyCacheSeconds, in: 0...Double.infinity)
        http.read("trustedProxies", into: &trustedProxies)
        http.read("eventsHeartbeatSeconds", into: &eventsHeartbeatSeconds, in: 0.1...Double.infinity)
        http.read("maxEventStreamsPerAccount", into: &maxEventStreamsPerAccount, in: 0...Int.max)
        let storage = config.scoped(to: "storage")
        storage.read("path", into: &storagePath)
        storage.read("minFreeBytes", into: &minFreeBytes)
        storage.read("keepUploads", into: &keepUploads)
        storage.read("resultRetentionHours", into: &resultRetentionHours)
        storage.read("sweepIntervalSeconds", into: &sweepIntervalSeconds)
        mediaStorage = MediaStorageSettings(reader: config)
        config.scoped(to: "database").read("url", into: &databaseURL)
        readJobs(config.scoped(to: "jobs"))
        config.scoped(to: "isolation").read("childUsers", into: &childUsers)
        config.scoped(to: "isolation").read("allowWeaker", into: &allowWeakerIsolation)
        config.scoped(to: "security").read("serverSecret", into: &serverSecret)
        readUploads(config.scoped(to: "upload"))
        config.scoped(to: "accounts").read("maxPerAddressPerHour", into: &accountsPerAddressPerHour)
        webhooks = WebhookSettings(reader: config)
        push = PushSettings(reader: config)
    }

    private mutating func readJobs(_ jobs: ConfigReader) {
        jobs.read("workers", into: &workers, in: 0...Int.max)
        jobs.read("leaseSeconds", into: &leaseSeconds, in: 3...Double.infinity)
        jobs.read("maxAttempts", into: &maxAttempts, in: 1...Int.max)
        jobs.read("niceness", into: &niceness, in: 0...19)
        jobs.read("progressIntervalMs", into: &progressIntervalMs, in: 0...Int.max)
        jobs.read("executable", into: &childExecutable)
        jobs.read("childMemoryBytes", into: &childMemoryBytes)
        jobs.read("timeBudgetSeconds", into: &timeBudgetSeconds, in: 1...Double.infinity)
        jobs.read("timeBudgetPerVideoSecond", into: &timeBudgetPerVideoSecond, in: 0...Double.infinity)
        jobs.read("retryBackoffSeconds", into: &retryBackoffSeconds, in: 0...Double.infinity)
    }

    private mutating func readUploads(_ upload: ConfigReader) {
        upload.read("maxBytes", into: &maxUploadBytes)
        upload.read("maxConcurrent", into: &maxConcurrentUploads, in: 0...Int.max)
        upload.read("maxConcurrentPerAccount", into: &maxConcurrentUploadsPerAccount, in: -1...Int.max)
        upload.read("minBytesPerSecond", into: &minUploadBytesPerSecond, in: 0...Int.max)
        upload.read("stallSeconds", into: &uploadStallSeconds, in: 0...Double.infinity)
        upload.read("resumableExpiryHours", into: &resumableExpiryHours, in: 0.001...Double.infinity)
        upload.read("maxDurationSeconds", into: &maxDurationSeconds)
        upload.read("minTargetDuration", into: &minTargetDuration)
        upload.read("maxTargetDuration", into: &maxTargetDuration)
        upload.read("defaultTargetDuration", into: &defaultTargetDuration)
    }

    /// The origin used in absolute URLs.
    public var baseURL: String {
        if !publicBaseURL.isEmpty {
            return publicBaseURL.hasSuffix("/") ? String(publicBaseURL.dropLast()) : publicBaseURL
        }
        let shownHost = host == "0.0.0.0" || host == "::" ? "localhost" : host
        return "http://\(shownHost):\(port)"
    }

    public var resultRetention: TimeInterval { resultRetentionHours * 3600 }
}

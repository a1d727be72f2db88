import Foundation

// Upload admission: every way a file comes in (a plain multipart upload, a tus or IETF resumable
// upload) takes its place against the plan's jobs at once in the store, in one transaction with
// the row that holds the place, so parallel requests from one account (on any number of API
// processes) cannot all pass a check made before any of them was recorded.
//
// What counts against jobs at once: the account's pending and processing jobs, its resumable
// uploads still receiving (not past their expiry), and its plain uploads being received (an
// `upload_admission` row each, kept alive by the receiving request and deleted when it ends; one
// whose request died lapses at `expiresAt`).

/// Sign-ups per client in a sliding window, counted in the store so the limit holds across API
/// processes. `client` is an opaque key (the caller hashes the address).
public enum SignupAdmission: Sendable, Equatable {
    case admitted
    /// Too many: the next one is allowed in this many seconds.
    case refused(retryAfterSeconds: Int)
}

import Foundation

/// Every sentence Moments says to the people who use it, in one place: the `detail` of each API
/// problem, a job's status messages and failure reasons, push notifications, and the refusals of
/// uploads, re-cuts, webhooks, keys, devices and subscriptions. Callers keep the stable codes, the
/// statuses and the figures; they ask `Say` for the words, so that a sentence is changed (or one
/// day translated) here and nowhere else. `scripts/check-wording` fails when a sentence for the
/// user is written outside this module.
///
/// A sentence says what is wrong and what to do, in the user's terms. A clause a lower layer
/// diagnoses (a media error's figures, an App Store verification fault, a webhook's DNS verdict)
/// may be passed in; paths and FFmpeg's text never are (they go to the log).
///
/// This module imports nothing of the project but its vocabulary, so every module can use it.
public enum Say {
    /// A time as the API writes it (ISO 8601, UTC).
    public static func timestamp(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

    /// "1 job", "3 jobs".
    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}

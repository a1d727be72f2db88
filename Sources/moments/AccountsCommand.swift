import ArgumentParser
import Configuration
import Foundation
import JobMedia
import Logging
import MomentsConfig
import Store

/// `moments accounts …`: the operator's view of accounts, on the same store as the server
/// (`DATABASE_URL`: PostgreSQL; else SQLite in WAL mode, safe while the server runs).
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts",
        abstract: "Create and inspect accounts; grant or revoke pro; manage API keys, testers and disabled accounts.",
        subcommands: [
            Create.self, Show.self, GrantPro.self, Revoke.self, Usage.self, Keys.self, RotateKey.self, RevokeKey.self,
            Disable.self, Enable.self, Tester.self
        ])

    struct Options: ParsableArguments {
        @Option(
            help:
                "Storage folder holding moments.sqlite (default: storage.path / STORAGE_PATH; ignored when DATABASE_URL names PostgreSQL)."
        ) var storage: String?
        @Flag(help: "Print JSON.") var json = false

        /// The database; only `create` may make a new one (a mistyped --storage is an error).
        func open(creating: Bool = false) async throws -> (any MomentsStore, PlanSettings) {
            let config = try await MomentsConfiguration.reader()
            var settings = ServiceSettings(reader: config)
            if let storage { settings.storagePath = storage }
            let location = StoreLocation(settings.databaseURL, storagePath: settings.storagePath)
            if case .sqlite(let path) = location, !creating, !FileManager.default.fileExists(atPath: path) {
                throw ValidationError("no database at \(path) (start the server once, or create an account first)")
            }
            var logger = Logger(label: "moments-accounts")
            logger.logLevel = .warning
            let store = try await StoreOpener.open(
                location, sandboxForAll: AppStoreSettings(reader: config).sandboxForAll, logger: logger)
            return (store, PlanSettings(reader: config))
        }

        /// Runs `body` on the database, the store running for as long as it takes.
        func withStore<T>(creating: Bool = false, _ body: (any MomentsStore, PlanSettings) async throws -> T)
            async throws -> T
        {
            let (store, plans) = try await open(creating: creating)
            return try await StoreOpener.whileRunning(store) { try await body(store, plans) }
        }
    }

    static func account(_ db: any MomentsStore, _ id: String) async throws -> Account {
        guard let account = try await db.account(id: id.lowercased()) else { throw ValidationError("no account \(id)") }
        return account
    }

    static func printJSON(_ object: [String: Any?]) {
        let clean = object.compactMapValues { $0 }
        if let data = try? JSONSerialization.data(withJSONObject: clean, options: [.prettyPrinted, .sortedKeys]) {
            print(String(decoding: data, as: UTF8.self))
        }
    }

    static var iso: ISO8601DateFormatter { ISO8601DateFormatter() }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account and print its API key (shown once).")
        @OptionGroup var options: Options
        @Option(help: "A label for the account.") var label: String?

        func run() async throws {
            try await options.withStore(creating: true) { db, _ in
                let (account, key) = try await db.createAccount(label: label, plan: "free", now: Date())
                if options.json {
                    printJSON(["account_id": account.id, "api_key": key])
                } else {
                    print("account \(account.id)\napi key \(key)   (shown once; stored only as a hash)")
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "An account: plan, entitlement, usage this month.")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String

        func run() async throws {
            try await options.withStore() { db, plans in
                let account = try await AccountsCommand.account(db, id)
                let now = Date()
                let entitlement = try await db.entitlement(accountId: account.id, now: now)
                let plan = entitlement.grantsPro ? plans.pro : plans.free
                let period = UsagePeriod.month(of: now)
                let used = try await db.usedUnits(accountId: account.id, period: period.name)
                let limit = plan.monthlyHighlights.map(String.init) ?? "unlimited"
                if options.json {
                    printJSON([
                        "account_id": account.id, "label": account.label, "plan": plan.name,
                        "disabled": account.isDisabled, "tester": account.tester,
                        "entitlement_state": entitlement.state?.rawValue,
                        "entitlement_product": entitlement.subscription?.productId,
                        "expires_at": entitlement.expiresAt.map(AccountsCommand.iso.string), "period": period.name,
                        "used": used,
                        "limit": plan.monthlyHighlights, "resets_at": AccountsCommand.iso.string(from: period.resetsAt)
                    ])
                    return
                }
                print("account   \(account.id)\(account.label.map { "  (\($0))" } ?? "")")
                print("created   \(AccountsCommand.iso.string(from: account.createdAt))")
                if let disabled = account.disabledAt {
                    print("DISABLED  since \(AccountsCommand.iso.string(from: disabled))")
                }
                if account.tester { print("tester    sandbox purchases grant pro") }
                print("plan      \(plan.name)")
                if let sub = entitlement.subscription, let state = entitlement.state {
                    let until =
                        state == .revoked ? "" : " until \(entitlement.expiresAt.map(AccountsCommand.iso.string) ?? "-")"
                    print("entitled  \(sub.productId) \(state.rawValue)\(until) (source: \(sub.source))")
                } else {
                    print("entitled  nothing")
                }
                print(
                    "usage     \(used) of \(limit) in \(period.name); resets \(AccountsCommand.iso.string(from: period.resetsAt))"
                )
            }
        }
    }

    struct GrantPro: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grant-pro", abstract: "Grant pro until a date (an operator's grant).")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String
        @Option(help: "Until when: YYYY-MM-DD (UTC midnight) or an ISO 8601 time.") var until: String

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                guard
                    let date = AccountsCommand.iso.date(from: until) ?? AccountsCommand.iso.date(from: until + "T00:00:00Z")
                else {
                    throw ValidationError("--until must be YYYY-MM-DD or an ISO 8601 time")
                }
                guard date > Date() else { throw ValidationError("--until must be in the future") }
                try await db.grantPro(accountId: account.id, until: date, now: Date())
                print("account \(account.id): pro until \(AccountsCommand.iso.string(from: date))")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke every subscription and grant of an account (back to free).")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                let count = try await db.revokeSubscriptions(accountId: account.id, now: Date())
                print("account \(account.id): \(count) subscription\(count == 1 ? "" : "s") revoked")
            }
        }
    }

    struct Usage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The usage ledger of an account, newest first.")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String
        @Option(help: "Lines to show.") var limit = 50

        func run() async throws {
            try await options.withStore() { db, plans in
                let account = try await AccountsCommand.account(db, id)
                let entries = try await db.ledger(accountId: account.id, limit: limit)
                if options.json {
                    let rows = entries.map {
                        [
                            "time": AccountsCommand.iso.string(from: $0.createdAt), "job_id": $0.jobId, "period": $0.period,
                            "change": $0.change, "worker_seconds": $0.workerSeconds, "reason": $0.reason
                        ] as [String: Any]
                    }
                    if let data = try? JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys])
                    {
                        print(String(decoding: data, as: UTF8.self))
                    }
                    return
                }
                if entries.isEmpty { print("no usage yet") }
                let spent = try await db.workerSecondsUsed(accountId: account.id, now: Date())
                let pro = try await db.entitlement(accountId: account.id, now: Date()).grantsPro
                if let budget = (pro ? plans.pro : plans.free).dailyWorkerSeconds {
                    print(String(format: "worker time today: %.0f s of %.0f s", spent, budget))
                }
                for e in entries {
                    let time = e.workerSeconds > 0 ? String(format: "  %.1f s", e.workerSeconds) : ""
                    print(
                        "\(AccountsCommand.iso.string(from: e.createdAt))  \(e.period)  \(e.change >= 0 ? "+" : "")\(e.change)\(time)  job \(e.jobId)  \(e.reason)"
                    )
                }
            }
        }
    }

    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The API keys of an account (never the secrets).")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                let keys = try await db.keys(accountId: account.id)
                let iso = AccountsCommand.iso
                if options.json {
                    let rows = keys.map { key -> [String: Any] in
                        var row: [String: Any] = [
                            "id": key.id, "prefix": key.prefix, "created_at": iso.string(from: key.createdAt),
                            "active": key.isActive
                        ]
                        row["label"] = key.label
                        row["last_used_at"] = key.lastUsedAt.map(iso.string)
                        row["revoked_at"] = key.revokedAt.map(iso.string)
                        return row
                    }
                    if let data = try? JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys])
                    {
                        print(String(decoding: data, as: UTF8.self))
                    }
                    return
                }
                for key in keys {
                    let state = key.revokedAt.map { "revoked \(iso.string(from: $0))" } ?? "active"
                    let used = key.lastUsedAt.map { "last used \(iso.string(from: $0))" } ?? "never used"
                    print(
                        "\(key.id)  \(key.prefix)…  \(state)  created \(iso.string(from: key.createdAt))  \(used)\(key.label.map { "  (\($0))" } ?? "")"
                    )
                }
            }
        }
    }

    struct RotateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-key",
            abstract: "Make a new API key and revoke every other key of the account; prints the new key (shown once).")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                guard let rotated = try await db.rotateKey(accountId: account.id, label: "rotated", now: Date()) else {
                    throw ValidationError("no account \(id)")
                }
                let (key, secret, revoked) = rotated
                if options.json {
                    printJSON([
                        "account_id": account.id, "key_id": key.id, "api_key": secret, "prefix": key.prefix,
                        "revoked": revoked
                    ])
                } else {
                    print(
                        "account \(account.id): new key \(key.id)\napi key \(secret)   (shown once; stored only as a hash)")
                    print("\(revoked) older key\(revoked == 1 ? "" : "s") revoked")
                }
            }
        }
    }

    struct RevokeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-key",
            abstract: "Revoke one API key of an account (not its last active one: use rotate-key or disable).")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String
        @Argument(help: "Key id (see `moments accounts keys`).") var keyId: String

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                switch try await db.revokeKey(id: keyId.lowercased(), accountId: account.id, now: Date()) {
                case .success(let key):
                    if options.json {
                        printJSON([
                            "account_id": account.id, "key_id": key.id,
                            "revoked_at": key.revokedAt.map(AccountsCommand.iso.string)
                        ])
                    } else {
                        print("account \(account.id): key \(key.id) (\(key.prefix)…) revoked")
                    }
                case .failure(.lastActiveKey):
                    throw ValidationError(
                        "key \(keyId) is the last active key of account \(account.id); use rotate-key to replace it, or disable the account"
                    )
                case .failure:
                    throw ValidationError("account \(account.id) has no key \(keyId)")
                }
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable an account: every request with its keys gets 403, at once.")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                let updated = try await db.setDisabled(accountId: account.id, true, now: Date())
                if options.json {
                    printJSON(["account_id": account.id, "disabled": true])
                } else {
                    print(
                        "account \(account.id): disabled since \(updated?.disabledAt.map(AccountsCommand.iso.string) ?? "now")"
                    )
                }
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled account again.")
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                try await db.setDisabled(accountId: account.id, false, now: Date())
                if options.json {
                    printJSON(["account_id": account.id, "disabled": false])
                } else {
                    print("account \(account.id): enabled")
                }
            }
        }
    }

    struct Tester: AsyncParsableCommand {
        enum Switch: String, EnumerableFlag { case on, off }

        static let configuration = CommandConfiguration(
            abstract:
                "Mark an account as a tester (--on: App Store sandbox/TestFlight purchases grant it pro) or not (--off)."
        )
        @OptionGroup var options: Options
        @Argument(help: "Account id.") var id: String
        @Flag(help: "Tester or not.") var state: Switch

        func run() async throws {
            try await options.withStore() { db, _ in
                let account = try await AccountsCommand.account(db, id)
                try await db.setTester(accountId: account.id, state == .on)
                if options.json {
                    printJSON(["account_id": account.id, "tester": state == .on])
                } else {
                    print(
                        "account \(account.id): \(state == .on ? "tester (sandbox purchases grant pro)" : "not a tester")")
                }
            }
        }
    }
}

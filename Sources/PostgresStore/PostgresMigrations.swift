import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL schema, by versioned migrations recorded in `moments_schema_migration`. They run
/// in one transaction under a transaction-scoped advisory lock: processes starting at once wait
/// for each other, and each migration is applied exactly once (or not at all).
///
/// Equivalent to the SQLite schema (AppDatabase's migrations, v1–v12) with PostgreSQL's types:
/// timestamptz for instants, jsonb for the job's input, output and segments, bigint counters, and
/// a `seq` identity on job and api_key standing for SQLite's rowid (insertion order breaks ties).
enum PostgresMigrations {
    /// pg_advisory_xact_lock key: "moments" in ASCII.
    static let lockKey: Int64 = 0x6d6f6d656e7473

    static let all: [(version: Int, name: String, statements: [String])] = [
        (
            1, "accounts, keys, jobs, ledger, subscriptions, notifications, heartbeat",
            [
                """
                CREATE TABLE account (
                    id text PRIMARY KEY,
                    plan text NOT NULL DEFAULT 'free',
                    label text,
                    "createdAt" timestamptz NOT NULL,
                    "disabledAt" timestamptz,
                    tester boolean NOT NULL DEFAULT false
                )
                """,
                """
                CREATE TABLE api_key (
                    id text PRIMARY KEY,
                    seq bigint GENERATED ALWAYS AS IDENTITY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    hash text NOT NULL UNIQUE,
                    prefix text NOT NULL,
                    label text,
                    "createdAt" timestamptz NOT NULL,
                    "lastUsedAt" timestamptz,
                    "revokedAt" timestamptz
                )
                """,
                #"CREATE INDEX api_key_account ON api_key ("accountId", "createdAt", seq)"#,
                """
                CREATE TABLE job (
                    id text PRIMARY KEY,
                    seq bigint GENERATED ALWAYS AS IDENTITY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    status text NOT NULL,
                    stage text,
                    progress bigint NOT NULL DEFAULT 0,
                    message text NOT NULL,
                    "targetDuration" bigint NOT NULL,
                    quality text NOT NULL,
                    input jsonb NOT NULL,
                    "estimatedSeconds" bigint NOT NULL,
                    attempts bigint NOT NULL DEFAULT 0,
                    "createdAt" timestamptz NOT NULL,
                    "startedAt" timestamptz,
                    "finishedAt" timestamptz,
                    "updatedAt" timestamptz NOT NULL,
                    "processingSeconds" double precision,
                    "errorCode" text,
                    "errorMessage" text,
                    output jsonb,
                    segments jsonb,
                    "mediaDeletedAt" timestamptz,
                    "quotaPeriod" text,
                    "quotaState" text,
                    "outputCap" bigint,
                    "retentionHours" double precision,
                    "maxDurationSeconds" double precision,
                    "abnormalExits" bigint NOT NULL DEFAULT 0,
                    "runAfter" timestamptz,
                    "workerSeconds" double precision NOT NULL DEFAULT 0,
                    "leaseOwner" text,
                    "leaseExpiresAt" timestamptz
                )
                """,
                // The claim: pending jobs by runAfter and age; the fairness terms by account and state.
                #"CREATE INDEX job_queue ON job (status, "runAfter", "createdAt")"#,
                #"CREATE INDEX job_account ON job ("accountId", "createdAt")"#,
                #"CREATE INDEX job_account_status ON job ("accountId", status, "startedAt")"#,
                #"CREATE INDEX job_lease ON job (status, "leaseExpiresAt")"#,
                #"CREATE INDEX job_finished ON job ("finishedAt") WHERE "mediaDeletedAt" IS NULL"#,
                """
                CREATE TABLE usage_ledger (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    "jobId" text NOT NULL,
                    period text NOT NULL,
                    change bigint NOT NULL,
                    "workerSeconds" double precision NOT NULL DEFAULT 0,
                    reason text NOT NULL,
                    "createdAt" timestamptz NOT NULL
                )
                """,
                #"CREATE INDEX usage_ledger_account_period ON usage_ledger ("accountId", period)"#,
                #"CREATE INDEX usage_ledger_account_time ON usage_ledger ("accountId", "createdAt")"#,
                """
                CREATE TABLE subscription (
                    "originalTransactionId" text PRIMARY KEY,
                    "accountId" text REFERENCES account(id) ON DELETE SET NULL,
                    "productId" text NOT NULL,
                    "expiresAt" timestamptz,
                    "gracePeriodExpiresAt" timestamptz,
                    state text NOT NULL,
                    "lastSignedDate" timestamptz NOT NULL,
                    environment text NOT NULL,
                    source text NOT NULL,
                    "updatedAt" timestamptz NOT NULL,
                    "revokedAt" timestamptz
                )
                """,
                #"CREATE INDEX subscription_account ON subscription ("accountId")"#,
                """
                CREATE TABLE app_store_notification (
                    "notificationUUID" text PRIMARY KEY,
                    "notificationType" text NOT NULL,
                    subtype text,
                    "originalTransactionId" text,
                    "signedDate" timestamptz NOT NULL,
                    "receivedAt" timestamptz NOT NULL,
                    applied boolean NOT NULL
                )
                """,
                """
                CREATE TABLE heartbeat (
                    id bigint PRIMARY KEY,
                    at timestamptz NOT NULL
                )
                """
            ]
        ),
        (
            2, "webhooks: endpoints, outbox, attempts",
            [
                """
                CREATE TABLE webhook_endpoint (
                    "accountId" text PRIMARY KEY REFERENCES account(id) ON DELETE CASCADE,
                    url text NOT NULL,
                    secret text NOT NULL,
                    "createdAt" timestamptz NOT NULL,
                    "rotatedAt" timestamptz
                )
                """,
                """
                CREATE TABLE webhook_delivery (
                    id text PRIMARY KEY,
                    seq bigint GENERATED ALWAYS AS IDENTITY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    "jobId" text NOT NULL,
                    "eventType" text NOT NULL,
                    payload text NOT NULL,
                    status text NOT NULL,
                    attempts bigint NOT NULL DEFAULT 0,
                    "nextAttemptAt" timestamptz,
                    "createdAt" timestamptz NOT NULL,
                    "deliveredAt" timestamptz,
                    "lastStatusCode" bigint,
                    "lastError" text,
                    "leaseOwner" text,
                    "leaseExpiresAt" timestamptz
                )
                """,
                #"CREATE INDEX webhook_delivery_due ON webhook_delivery (status, "nextAttemptAt")"#,
                #"CREATE INDEX webhook_delivery_job ON webhook_delivery ("jobId", "createdAt")"#,
                """
                CREATE TABLE webhook_attempt (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    "deliveryId" text NOT NULL REFERENCES webhook_delivery(id) ON DELETE CASCADE,
                    number bigint NOT NULL,
                    at timestamptz NOT NULL,
                    "statusCode" bigint,
                    error text,
                    "durationMs" bigint NOT NULL
                )
                """,
                #"CREATE INDEX webhook_attempt_delivery ON webhook_attempt ("deliveryId", number)"#
            ]
        ),
        (
            3, "resumable uploads",
            [
                """
                CREATE TABLE resumable_upload (
                    id text PRIMARY KEY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    flavor text NOT NULL,
                    length bigint,
                    "offset" bigint NOT NULL DEFAULT 0,
                    filename text,
                    "targetDuration" integer NOT NULL,
                    quality text NOT NULL,
                    state text NOT NULL,
                    "jobId" text,
                    "errorCode" text,
                    "errorMessage" text,
                    "createdAt" timestamptz NOT NULL,
                    "updatedAt" timestamptz NOT NULL,
                    "expiresAt" timestamptz NOT NULL,
                    holder text,
                    "heldUntil" timestamptz
                )
                """,
                #"CREATE INDEX resumable_upload_account ON resumable_upload ("accountId", state)"#,
                #"CREATE INDEX resumable_upload_expiry ON resumable_upload (state, "expiresAt")"#
            ]
        ),
        (
            4, "job edits: shape, pinned and excluded moments, re-cuts",
            [
                "ALTER TABLE job ADD COLUMN edit jsonb",
                "ALTER TABLE resumable_upload ADD COLUMN edit jsonb"
            ]
        ),
        (
            5, "content fingerprints: re-uploads recognised per account",
            [
                """
                CREATE TABLE content_fingerprint (
                    "jobId" text PRIMARY KEY REFERENCES job(id) ON DELETE CASCADE,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    duration double precision NOT NULL,
                    fingerprint text NOT NULL,
                    "createdAt" timestamptz NOT NULL
                )
                """,
                #"CREATE INDEX content_fingerprint_account ON content_fingerprint ("accountId", "createdAt")"#
            ]
        ),
        (
            6, "push notifications: devices and outbox",
            [
                """
                CREATE TABLE push_device (
                    token text PRIMARY KEY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    environment text NOT NULL,
                    "createdAt" timestamptz NOT NULL,
                    "updatedAt" timestamptz NOT NULL
                )
                """,
                #"CREATE INDEX push_device_account ON push_device ("accountId", "createdAt")"#,
                """
                CREATE TABLE push_delivery (
                    id text PRIMARY KEY,
                    seq bigint GENERATED ALWAYS AS IDENTITY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    "jobId" text NOT NULL,
                    token text NOT NULL,
                    environment text NOT NULL,
                    payload text NOT NULL,
                    status text NOT NULL,
                    attempts bigint NOT NULL DEFAULT 0,
                    "nextAttemptAt" timestamptz,
                    "createdAt" timestamptz NOT NULL,
                    "sentAt" timestamptz,
                    "lastStatusCode" bigint,
                    "lastReason" text,
                    "leaseOwner" text,
                    "leaseExpiresAt" timestamptz
                )
                """,
                #"CREATE INDEX push_delivery_due ON push_delivery (status, "nextAttemptAt")"#,
                #"CREATE INDEX push_delivery_job ON push_delivery ("jobId", "createdAt")"#,
                #"CREATE INDEX push_delivery_token ON push_delivery (token, status)"#
            ]
        ),
        (
            8, "upload admission and sign-up limit",
            [
                """
                CREATE TABLE upload_admission (
                    id text PRIMARY KEY,
                    "accountId" text NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                    "createdAt" timestamptz NOT NULL,
                    "expiresAt" timestamptz NOT NULL
                )
                """,
                #"CREATE INDEX upload_admission_account ON upload_admission ("accountId", "expiresAt")"#,
                #"CREATE INDEX upload_admission_expiry ON upload_admission ("expiresAt")"#,
                """
                CREATE TABLE signup_attempt (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    client text NOT NULL,
                    "createdAt" timestamptz NOT NULL
                )
                """,
                #"CREATE INDEX signup_attempt_client ON signup_attempt (client, "createdAt")"#,
                #"CREATE INDEX signup_attempt_time ON signup_attempt ("createdAt")"#
            ]
        ),
        (
            9, "job changes notified",
            [
                // What a job's event stream shows (status, progress, message, whether its media
                // are there) changed, or the job went: NOTIFY with its id, delivered on commit.
                """
                CREATE FUNCTION moments_job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'DELETE' THEN
                        PERFORM pg_notify('moments_job_changed', OLD.id);
                    ELSIF NEW.status IS DISTINCT FROM OLD.status OR NEW.progress IS DISTINCT FROM OLD.progress
                        OR NEW.message IS DISTINCT FROM OLD.message
                        OR NEW."mediaDeletedAt" IS DISTINCT FROM OLD."mediaDeletedAt" THEN
                        PERFORM pg_notify('moments_job_changed', NEW.id);
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER job_changed AFTER UPDATE OR DELETE ON job
                FOR EACH ROW EXECUTE FUNCTION moments_job_changed()
                """
            ]
        )
    ]

    /// Brings the database to the current schema; returns the versions applied now.
    @discardableResult
    static func migrate(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS moments_schema_migration (
                    version bigint PRIMARY KEY, name text NOT NULL, "appliedAt" timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            var applied = Set<Int>()
            for row in try await connection.query("SELECT version FROM moments_schema_migration", logger: logger)
                .collect()
            {
                applied.insert(try row.decode(Int.self))
            }
            var now: [Int] = []
            for migration in all where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO moments_schema_migration (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                logger.info(
                    "PostgreSQL schema migrated",
                    metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                now.append(migration.version)
            }
            return now
        }
    }
}

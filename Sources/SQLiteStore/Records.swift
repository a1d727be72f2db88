import GRDB
import Store

// The models' GRDB record conformances and table names: the model types live in Store, which
// does not link GRDB; only this engine reads and writes them as rows.

extension APIKey: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "api_key"
}

extension Account: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "account"
}

extension StoredFingerprint: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "content_fingerprint"
}

extension JobState: DatabaseValueConvertible {}

extension Job: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "job"
}

extension UsageEntry: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "usage_ledger"
}

extension ResumableUploadState: DatabaseValueConvertible {}

extension ResumableUpload: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "resumable_upload"
}

extension Subscription: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "subscription"
}

extension StoreNotification: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "app_store_notification"
}

extension Job {
    public enum Columns {
        public static let id = Column("id")
        public static let accountId = Column("accountId")
        public static let status = Column("status")
        public static let createdAt = Column("createdAt")
        public static let finishedAt = Column("finishedAt")
        public static let mediaDeletedAt = Column("mediaDeletedAt")
        public static let runAfter = Column("runAfter")
        public static let leaseOwner = Column("leaseOwner")
        public static let leaseExpiresAt = Column("leaseExpiresAt")
    }
}

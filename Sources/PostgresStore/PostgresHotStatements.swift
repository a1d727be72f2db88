import Foundation
import PostgresNIO

/// The statements every request runs (the key check) and apps poll (job status), prepared once per
/// connection: each call is then one Bind/Execute round trip, with no parsing or planning.
enum HotStatements {
    struct Authenticate: PostgresPreparedStatement {
        static let name = "moments_authenticate_v1"
        static let sql = #"""
            SELECT api_key.id, api_key."revokedAt" IS NOT NULL, account."disabledAt" IS NOT NULL,
                   account.id, account.plan, account.label, account."createdAt", account.tester
            FROM api_key JOIN account ON account.id = api_key."accountId" WHERE api_key.hash = $1
            """#
        typealias Row = (String, Bool, Bool, String, String, String?, Date, Bool)
        var keyHash: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(keyHash)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    struct JobStatus: PostgresPreparedStatement {
        static let name = "moments_job_status_v1"
        static let sql = #"""
            SELECT status, progress, message, "mediaDeletedAt" IS NOT NULL FROM job WHERE id = $1 AND "accountId" = $2
            """#
        typealias Row = (String, Int, String, Bool)
        var id: String
        var accountId: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(id)
            bindings.append(accountId)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

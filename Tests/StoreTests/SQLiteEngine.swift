import Foundation
import JobStore

/// The SQLite engine as the tests open it.
enum SQLiteEngine {
    static func open(path: String) throws -> any MomentsStore {
        try AppDatabase(path: path)
    }
}

import Foundation
import SQLiteStore
import Store

/// The SQLite engine as the tests open it.
enum SQLiteEngine {
    static func open(path: String) throws -> any MomentsStore {
        try AppDatabase(path: path)
    }
}

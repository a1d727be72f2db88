import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Wording

/// GET /openapi.json: the OpenAPI 3.1 description, a resource of this module (kept true by a test
/// that compares it with the routes).
struct OpenAPIController {
    static let document: ByteBuffer? = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"),
            let data = try? Data(contentsOf: url)
        else { return nil }
        return ByteBuffer(bytes: data)
    }()

    func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/openapi.json", on: router) { _, _ -> Response in
            guard let document = Self.document else {
                throw Problem(
                    .internalServerError, code: "internal_error",
                    detail: Say.missingFromBuild("OpenAPI document"))
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: document))
        }
    }
}

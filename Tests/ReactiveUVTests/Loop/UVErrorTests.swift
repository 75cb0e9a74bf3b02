import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

final class UVErrorTests: XCTestCase {
    func testNameMessageAndDescription() {
        let error = UVError(code: UV_EADDRINUSE.rawValue, operation: "listen", target: "127.0.0.1:7070")
        XCTAssertEqual(error.name, "EADDRINUSE")
        XCTAssertEqual(error.message, "address already in use")
        XCTAssertEqual(error.description, "EADDRINUSE (address already in use) during listen on 127.0.0.1:7070")
        XCTAssertEqual(UVError.noSuchFile.description, "ENOENT (no such file or directory)")
        XCTAssertEqual(UVError(code: UV_EOF.rawValue, operation: "read").description, "EOF (end of file) during read")
    }

    func testStaticCodes() {
        XCTAssertEqual(UVError.addressInUse.name, "EADDRINUSE")
        XCTAssertEqual(UVError.connectionRefused.name, "ECONNREFUSED")
        XCTAssertEqual(UVError.noSuchFile.name, "ENOENT")
        XCTAssertEqual(UVError.permissionDenied.name, "EACCES")
        XCTAssertEqual(UVError.connectionReset.name, "ECONNRESET")
        XCTAssertEqual(UVError.brokenPipe.name, "EPIPE")
        XCTAssertEqual(UVError.cancelled.name, "ECANCELED")
        XCTAssertEqual(UVError.endOfFile.name, "EOF")
        XCTAssertEqual(UVError.timedOut.name, "ETIMEDOUT")
        XCTAssertEqual(UVError.invalidArgument.name, "EINVAL")
        XCTAssertEqual(UVError.busy.name, "EBUSY")
        XCTAssertEqual(UVError.noSuchFile.code, -ENOENT)
    }

    func testPositiveErrnoIsNegated() {
        XCTAssertEqual(UVError(code: ENOENT), .noSuchFile)
        XCTAssertEqual(UVError(code: ENOENT).code, UV_ENOENT.rawValue)
    }

    func testEqualityAndPatternMatchingUseTheCodeOnly() {
        let thrown = UVError(code: UV_EADDRINUSE.rawValue, operation: "listen", target: "[::1]:80")
        XCTAssertEqual(thrown, .addressInUse)
        XCTAssertNotEqual(thrown, .permissionDenied)
        XCTAssertEqual(Set([thrown, .addressInUse, .noSuchFile]).count, 2)

        func fail() throws { throw thrown }
        var matched = ""
        do {
            try fail()
        } catch UVError.permissionDenied {
            matched = "permissionDenied"
        } catch UVError.addressInUse {
            matched = "addressInUse"
        } catch {
            matched = "other"
        }
        XCTAssertEqual(matched, "addressInUse")

        struct Other: Error {}
        XCTAssertFalse(UVError.addressInUse ~= Other())
        switch thrown {
        case .noSuchFile: XCTFail("matched the wrong code")
        case .addressInUse: break
        default: XCTFail("did not match")
        }
    }

    func testUnknownCodeHasAName() {
        let odd = UVError(code: -99_999)
        XCTAssertFalse(odd.name.isEmpty)
        XCTAssertFalse(odd.message.isEmpty)
    }

    func testUVCheck() {
        XCTAssertNoThrow(try uvCheck(0, "uv_timer_start"))
        XCTAssertEqual(try uvCheck(5, "uv_read"), 5)
        XCTAssertThrowsError(try uvCheck(UV_ENOENT.rawValue, "open", "/nope")) { error in
            guard let error = error as? UVError else { return XCTFail("not a UVError: \(error)") }
            XCTAssertEqual(error.code, UV_ENOENT.rawValue)
            XCTAssertEqual(error.operation, "open")
            XCTAssertEqual(error.target, "/nope")
            XCTAssertEqual(error.description, "ENOENT (no such file or directory) during open on /nope")
        }
    }
}

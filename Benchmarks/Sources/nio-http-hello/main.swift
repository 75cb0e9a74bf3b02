// The swift-nio peer of the http rows: NIOHTTP1 on one event-loop thread (the server a
// Swift user would otherwise pick), with the pipelining handler NIO recommends, answering
// every request with the same 13-byte body as the other servers.
//
//     swift run -c release --package-path Benchmarks nio-http-hello PORT
//
// Prints "listening on 127.0.0.1:PORT" once; exits on SIGINT/SIGTERM (the run script kills it).
import NIOCore
import NIOHTTP1
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Answers each request once its end arrives; keep-alive follows the request.
final class HelloHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var keepAlive = true
    private let body: ByteBuffer = ByteBuffer(string: "Hello, World!")
    private let headers: HTTPHeaders = ["Content-Type": "text/plain", "Content-Length": "13"]

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let keep = keepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keep { context.close(promise: nil) }
            }
        }
    }
}

let port = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 0 : 0
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(ChannelOptions.backlog, value: 1024)
    .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.pipeline.configureHTTPServerPipeline(withPipeliningAssistance: true).flatMap {
            channel.pipeline.addHandler(HelloHandler())
        }
    }
let channel = try bootstrap.bind(host: "127.0.0.1", port: port).wait()
print("listening on 127.0.0.1:\(channel.localAddress?.port ?? port)")
fflush(stdout)
try channel.closeFuture.wait()

package fw;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/** The Netty backend: `Backend PORT`; a request costs 2 ms of CPU, 10 ms with `heavy=1`. */
public final class Backend {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(2);
        new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 16), new Handler());
                    }
                })
                .bind("127.0.0.1", port)
                .sync();
        System.out.println("ready");
        System.out.flush();
    }

    static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        /** The logged window holds the whole of channelRead, the agent's request. */
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            long t0 = System.nanoTime();
            FullHttpRequest req = (FullHttpRequest) msg;
            String trace = Work.traceOf(req.headers().get("traceparent"));
            boolean quit = req.uri().startsWith("/quit");
            Work.markPhase(req.uri());
            super.channelRead(ctx, msg); // releases msg
            Work.served(trace, t0, System.nanoTime());
            if (quit) {
                Work.exitSoon();
            }
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            boolean quit = req.uri().startsWith("/quit");
            int v = quit ? 0 : work(req.uri().contains("heavy=1"));
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                    Unpooled.copiedBuffer("b" + v, StandardCharsets.UTF_8));
            res.headers().set(HttpHeaderNames.CONTENT_LENGTH, res.content().readableBytes());
            ctx.writeAndFlush(res);
        }

        static int work(boolean heavy) {
            return Work.burn(heavy ? 10 : 2);
        }
    }
}

package jscope.fw;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpRequest;
import jscope.Remote;

/**
 * Reads the message at the entry of SimpleChannelInboundHandler.channelRead
 * (context in slot 1, message in slot 2): only an HttpRequest opens a request.
 */
public final class NettyRead {
    private NettyRead() {}

    public static void enter(int site, Object[] slots) {
        String method = null, target = null, traceparent = null;
        Object channel = null;
        try {
            if (slots[2] instanceof HttpRequest) {
                HttpRequest r = (HttpRequest) slots[2];
                method = r.method().name();
                target = r.uri();
                traceparent = r.headers().get("traceparent");
                channel = ((ChannelHandlerContext) slots[1]).channel();
            }
        } catch (Throwable t) {
            method = null;
        }
        // A channel stays with its connection: the agent asks it for the
        // addresses once per connection.
        Remote.served(Thread.currentThread(), site, method, target, traceparent, channel, -1, -1);
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

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
        String request = null;
        Object channel = null;
        try {
            if (slots[2] instanceof HttpRequest) {
                HttpRequest r = (HttpRequest) slots[2];
                String traceparent = r.headers().get("traceparent");
                request = r.method().name() + '\n' + r.uri() + '\n'
                        + (traceparent == null ? "" : traceparent);
                channel = ((ChannelHandlerContext) slots[1]).channel();
            }
        } catch (Throwable t) {
            request = null;
        }
        // A channel stays with its connection: the agent asks it for the
        // addresses once per connection.
        Remote.served(Thread.currentThread(), site, request, channel, -1, -1);
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

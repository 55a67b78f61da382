package jscope.fw;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpRequest;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import jscope.Remote;

/**
 * Reads the message at the entry of SimpleChannelInboundHandler.channelRead
 * (context in slot 1, message in slot 2): only an HttpRequest opens a request.
 */
public final class NettyRead {
    private NettyRead() {}

    public static void enter(int site, Object[] slots) {
        String method = null, target = null, traceparent = null, local = null, remote = null;
        int localPort = 0, remotePort = 0;
        try {
            if (slots[2] instanceof HttpRequest) {
                HttpRequest r = (HttpRequest) slots[2];
                method = r.method().name();
                target = r.uri();
                traceparent = r.headers().get("traceparent");
                Channel channel = ((ChannelHandlerContext) slots[1]).channel();
                SocketAddress l = channel.localAddress();
                SocketAddress p = channel.remoteAddress();
                if (l instanceof InetSocketAddress && p instanceof InetSocketAddress) {
                    local = host((InetSocketAddress) l);
                    localPort = ((InetSocketAddress) l).getPort();
                    remote = host((InetSocketAddress) p);
                    remotePort = ((InetSocketAddress) p).getPort();
                }
            }
        } catch (Throwable t) {
            method = null;
        }
        Remote.served(site, method, target, traceparent, local, localPort, remote, remotePort);
    }

    private static String host(InetSocketAddress a) {
        return a.getAddress() == null ? null : a.getAddress().getHostAddress();
    }

    public static void exit(int site) {
        Remote.exit(site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

package jscope.fw;

import io.netty.handler.codec.http.HttpResponse;
import jscope.Remote;

/** The status of the message at the entry of HttpObjectEncoder.encode (slot 2), -1 for none. */
public final class NettyEncode {
    private NettyEncode() {}

    public static void enter(int site, Object[] slots) {
        int status = -1;
        try {
            if (slots[2] instanceof HttpResponse) {
                status = ((HttpResponse) slots[2]).status().code();
            }
        } catch (Throwable t) {
            status = -1;
        }
        Remote.answered(Thread.currentThread(), site, status);
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

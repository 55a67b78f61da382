package jscope.fw;

import java.net.Socket;
import jscope.Remote;
import okhttp3.Connection;
import okhttp3.Interceptor;

/** The socket an exchange goes over, at the entry of CallServerInterceptor.intercept (chain in slot 1). */
public final class OkHttpSend {
    private OkHttpSend() {}

    public static void enter(int site, Object[] slots) {
        Socket socket = null;
        try {
            Connection c = ((Interceptor.Chain) slots[1]).connection();
            socket = c == null ? null : c.socket();
        } catch (Throwable t) {
            socket = null;
        }
        Remote.sends(Thread.currentThread(), site, socket);
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

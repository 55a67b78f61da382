package jscope.fw;

import javax.servlet.http.HttpServletRequest;
import jscope.Remote;

/** Reads a javax.servlet request at the entry of HttpServlet.service (slot 1). */
public final class JavaxServlet {
    private JavaxServlet() {}

    public static void enter(int site, Object[] slots) {
        String method = null, target = null, traceparent = null;
        int localPort = -1, remotePort = -1;
        try {
            if (slots[1] instanceof HttpServletRequest) {
                HttpServletRequest r = (HttpServletRequest) slots[1];
                method = r.getMethod();
                target = r.getRequestURI();
                traceparent = r.getHeader("traceparent");
                localPort = r.getLocalPort();
                remotePort = r.getRemotePort();
            }
        } catch (Throwable t) {
            method = null;
        }
        // The request stands for its connection (containers recycle requests,
        // so the ports tell a reused one on another connection; the agent
        // asks for the addresses once per connection).
        Remote.served(Thread.currentThread(), site, method, target, traceparent, slots[1], localPort,
                remotePort);
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

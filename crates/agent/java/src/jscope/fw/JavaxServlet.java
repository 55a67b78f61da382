package jscope.fw;

import javax.servlet.http.HttpServletRequest;
import jscope.Remote;

/** Reads a javax.servlet request at the entry of HttpServlet.service (slot 1). */
public final class JavaxServlet {
    private JavaxServlet() {}

    public static void enter(int site, Object[] slots) {
        String method = null, target = null, traceparent = null, local = null, remote = null;
        int localPort = 0, remotePort = 0;
        try {
            if (slots[1] instanceof HttpServletRequest) {
                HttpServletRequest r = (HttpServletRequest) slots[1];
                method = r.getMethod();
                target = r.getRequestURI();
                traceparent = r.getHeader("traceparent");
                local = r.getLocalAddr();
                localPort = r.getLocalPort();
                remote = r.getRemoteAddr();
                remotePort = r.getRemotePort();
            }
        } catch (Throwable t) {
            method = null;
        }
        Remote.served(site, method, target, traceparent, local, localPort, remote, remotePort);
    }

    public static void exit(int site) {
        Remote.exit(site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

package jscope.fw;

import javax.servlet.http.HttpServletRequest;
import jscope.Remote;

/**
 * Reads a javax.servlet request at the entry of HttpServlet.service (slot 1):
 * its method, target and traceparent, one line each.
 */
public final class JavaxServlet {
    private JavaxServlet() {}

    /** Jetty's own request class: Jetty never moves one to another connection. */
    private static final String JETTY = "org.eclipse.jetty.server.Request";

    public static void enter(int site, Object[] slots) {
        String request = null;
        int localPort = -1, remotePort = -1;
        try {
            if (slots[1] instanceof HttpServletRequest) {
                HttpServletRequest r = (HttpServletRequest) slots[1];
                String traceparent = r.getHeader("traceparent");
                request = r.getMethod() + '\n' + r.getRequestURI() + '\n'
                        + (traceparent == null ? "" : traceparent);
                // Other containers recycle a request for later connections:
                // its ports tell. (Jetty's cost a socket query each.)
                if (!JETTY.equals(r.getClass().getName())) {
                    localPort = r.getLocalPort();
                    remotePort = r.getRemotePort();
                }
            }
        } catch (Throwable t) {
            request = null;
        }
        // The request stands for its connection: the agent asks for the
        // addresses once per connection.
        Remote.served(Thread.currentThread(), site, request, slots[1], localPort, remotePort);
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

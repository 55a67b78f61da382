package jscope.fw;

import java.nio.charset.StandardCharsets;
import jscope.Remote;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpRequest;

/**
 * Reads the request at the entry of InternalHttpClient.doExecute (slot 2) and,
 * unless it has a traceparent, sets the one the agent made.
 */
public final class Hc5Call {
    private Hc5Call() {}

    public static void enter(int site, Object[] slots) {
        String request = null;
        byte[] added = null;
        HttpRequest r = null;
        try {
            if (slots[2] instanceof HttpRequest) {
                r = (HttpRequest) slots[2];
                Header own = r.getFirstHeader("traceparent");
                String path = r.getPath();
                request = r.getMethod() + '\n' + (path == null ? "" : path) + '\n'
                        + (own == null ? "" : own.getValue());
                added = own == null ? new byte[Remote.TRACEPARENT] : null;
            }
        } catch (Throwable t) {
            request = null;
        }
        int n = Remote.calling(Thread.currentThread(), site, request, added);
        if (n > 0) {
            try {
                r.setHeader("traceparent", new String(added, 0, n, StandardCharsets.ISO_8859_1));
            } catch (Throwable t) {
                // sent without it
            }
        }
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

package jscope.fw;

import jscope.Remote;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpRequest;

/**
 * Reads the request at the entry of InternalHttpClient.doExecute (slot 2) and,
 * unless it has a traceparent, sets one on it.
 */
public final class Hc5Call {
    private Hc5Call() {}

    public static void enter(int site, Object[] slots) {
        String method = null, target = null, traceparent = null;
        try {
            if (slots[2] instanceof HttpRequest) {
                HttpRequest r = (HttpRequest) slots[2];
                method = r.getMethod();
                target = r.getPath();
                Header own = r.getFirstHeader("traceparent");
                traceparent = own == null ? null : own.getValue();
                if (traceparent == null) {
                    traceparent = Remote.traceparent();
                    if (traceparent != null) {
                        r.setHeader("traceparent", traceparent);
                    }
                }
            }
        } catch (Throwable t) {
            method = null;
        }
        Remote.calling(site, method, target, traceparent);
    }

    public static void exit(int site) {
        Remote.exit(site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

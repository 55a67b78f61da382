package jscope.fw;

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
        String method = null, target = null, traceparent = null;
        HttpRequest r = null;
        try {
            if (slots[2] instanceof HttpRequest) {
                r = (HttpRequest) slots[2];
                method = r.getMethod();
                target = r.getPath();
                Header own = r.getFirstHeader("traceparent");
                traceparent = own == null ? null : own.getValue();
            }
        } catch (Throwable t) {
            method = null;
        }
        String added = Remote.calling(Thread.currentThread(), site, method, target, traceparent);
        if (added != null) {
            try {
                r.setHeader("traceparent", added);
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

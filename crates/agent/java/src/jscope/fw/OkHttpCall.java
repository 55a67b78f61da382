package jscope.fw;

import jscope.Remote;
import okhttp3.Call;
import okhttp3.Request;

/**
 * Reads the request at the entry of RealCall.getResponseWithInterceptorChain
 * (the call in slot 0) and, unless it has a traceparent, gives the call a copy
 * with one (a Request is immutable).
 */
public final class OkHttpCall {
    private OkHttpCall() {}

    public static void enter(int site, Object[] slots) {
        String method = null, target = null, traceparent = null;
        try {
            Call call = (Call) slots[0];
            Request r = call.request();
            method = r.method();
            target = r.url().encodedPath();
            traceparent = r.header("traceparent");
            if (traceparent == null) {
                String added = Remote.traceparent();
                if (added != null
                        && Remote.setOkHttpRequest(call, r.newBuilder().header("traceparent", added).build())) {
                    traceparent = added;
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

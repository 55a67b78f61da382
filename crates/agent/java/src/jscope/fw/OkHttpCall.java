package jscope.fw;

import jscope.Remote;
import okhttp3.Call;
import okhttp3.Request;

/**
 * Reads the request at the entry of RealCall.getResponseWithInterceptorChain
 * (the call in slot 0) and, unless it has a traceparent, gives the call a copy
 * with the one the agent made (a Request is immutable).
 */
public final class OkHttpCall {
    private OkHttpCall() {}

    public static void enter(int site, Object[] slots) {
        String method = null, target = null, traceparent = null;
        Call call = null;
        Request r = null;
        try {
            call = (Call) slots[0];
            r = call.request();
            method = r.method();
            target = r.url().encodedPath();
            traceparent = r.header("traceparent");
        } catch (Throwable t) {
            method = null;
        }
        String added = Remote.calling(Thread.currentThread(), site, method, target, traceparent);
        if (added != null) {
            try {
                Remote.setOkHttpRequest(call, r.newBuilder().header("traceparent", added).build());
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

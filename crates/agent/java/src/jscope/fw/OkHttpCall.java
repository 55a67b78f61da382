package jscope.fw;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
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

    /** RealCall.originalRequest (final: set by reflection, or else through JNI). */
    private static final Field ORIGINAL = original();

    private static Field original() {
        try {
            Field f = Class.forName("okhttp3.RealCall", false, OkHttpCall.class.getClassLoader())
                    .getDeclaredField("originalRequest");
            f.setAccessible(true);
            return f;
        } catch (Throwable t) {
            return null;
        }
    }

    public static void enter(int site, Object[] slots) {
        String request = null;
        byte[] added = null;
        Call call = null;
        Request r = null;
        try {
            call = (Call) slots[0];
            r = call.request();
            String own = r.header("traceparent");
            request = r.method() + '\n' + r.url().encodedPath() + '\n' + (own == null ? "" : own);
            added = own == null ? new byte[Remote.TRACEPARENT] : null;
        } catch (Throwable t) {
            request = null;
        }
        int n = Remote.calling(Thread.currentThread(), site, request, added);
        if (n > 0) {
            try {
                Request copy = r.newBuilder()
                        .header("traceparent", new String(added, 0, n, StandardCharsets.ISO_8859_1))
                        .build();
                Field field = ORIGINAL;
                if (field != null && field.getDeclaringClass() == call.getClass()) {
                    field.set(call, copy);
                } else {
                    Remote.setOkHttpRequest(call, copy);
                }
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

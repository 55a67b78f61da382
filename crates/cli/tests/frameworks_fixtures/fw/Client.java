package fw;

import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * The OkHttp client: `Client FRONT_PORT WARMUP COUNT CHOSEN_TRACEPARENT`. Each
 * request is a jscope.Span after 15 ms of CPU spent outside it; every 20th of
 * the measured ones (the 7th, 27th, ...) takes the front's heavy branch, and the
 * 3rd carries the chosen traceparent. Warm-up requests come first, then
 * `measure EPOCH_MS` marks where the measured ones start.
 */
public final class Client {
    public static void main(String[] args) throws Exception {
        String front = "http://127.0.0.1:" + args[0];
        int warmup = Integer.parseInt(args[1]);
        int count = Integer.parseInt(args[2]);
        OkHttpClient client = new OkHttpClient();
        for (int i = 0; i < warmup; i++) {
            call(client, front + "/warm", null, false);
        }
        System.out.println("measure " + System.currentTimeMillis());
        Work.cpuMark("start");
        for (int i = 0; i < count; i++) {
            prepare();
            call(client, front + "/api/" + (i % 20 == 7 ? "heavy?heavy=1" : "light"), i == 3 ? args[3] : null, i % 20 == 7);
        }
        Work.cpuMark("end");
        System.out.println("done " + System.currentTimeMillis());
        call(client, front + "/quit", null, false);
        System.out.flush();
    }

    static int prepare() {
        return Work.burn(15);
    }

    static void call(OkHttpClient client, String url, String traceparent, boolean heavy) throws Exception {
        // The logged window holds the whole span, as the agent's request does.
        long t0 = System.nanoTime();
        long span = jscope.Span.start("call", heavy ? "branch=heavy" : "branch=light");
        String trace;
        try {
            Request.Builder b = new Request.Builder().url(url);
            if (traceparent != null) {
                b.header("traceparent", traceparent);
            }
            try (Response r = client.newCall(b.build()).execute()) {
                trace = r.body().string().split(" ")[0];
            }
        } finally {
            jscope.Span.end(span);
        }
        Work.served(trace, t0, System.nanoTime());
    }
}

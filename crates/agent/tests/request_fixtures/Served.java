import com.sun.net.httpserver.HttpServer;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URL;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Requests served by a pooled com.sun.net.httpserver (every 20th takes a CPU-heavy
 * branch; each allocates 2 MB and blocks on a lock that a thread serving no
 * request holds most of the time), then spans of jscope.Span nested on a thread
 * pool and, on JDK 21+, on virtual threads that sleep inside them (and allocate
 * after they end). Logs every request's and span's window:
 * `served TRACE THREAD T0 T1 heavy|light` and `span NAME ID THREAD T0 T1`, times
 * from System.nanoTime (CLOCK_MONOTONIC, the agent's clock).
 */
public class Served {
    static volatile long sink;
    static final PrintStream LOG = System.out;

    static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        long x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) x = x * 31 + i;
        }
        sink = x;
    }

    static void heavy() { spin(120_000_000L); }

    static void light() { spin(3_000_000L); }

    static synchronized void log(String line) { LOG.println(line); }

    static volatile Object kept;
    /** Held by a thread serving no request, so that requests block on it. */
    static final Object LOCK = new Object();

    /**
     * 2 MB in 32 KB arrays: several allocation samples at a 256 KB interval; and
     * a deflater, whose zlib state is some 256 KB of native memory.
     */
    static void allocate() {
        for (int i = 0; i < 64; i++) kept = new byte[32 * 1024];
        java.util.zip.Deflater d = new java.util.zip.Deflater();
        d.setInput(new byte[1]);
        d.finish();
        d.deflate(new byte[64]);
        d.end();
    }

    /** Blocks on LOCK (its holder lets go every few ms), then holds it briefly. */
    static void contend() {
        synchronized (LOCK) { spin(200_000L); }
    }

    static final java.util.concurrent.atomic.AtomicInteger NEXT =
        new java.util.concurrent.atomic.AtomicInteger();
    static final String[] LINES = new String[1000];
    static final String[] KINDS = new String[1000];
    static final long[] ENDS = new long[1000];

    public static void main(String[] args) throws Exception {
        int perClient = Integer.parseInt(args[0]);
        String chosen = args[1];
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        ExecutorService serving = Executors.newFixedThreadPool(2);
        server.setExecutor(serving);
        server.createContext("/work", ex -> {
            long t0 = System.nanoTime();
            String q = ex.getRequestURI().getQuery();
            boolean isHeavy = q != null && q.contains("heavy");
            allocate();
            contend();
            if (isHeavy) heavy(); else light();
            String tp = ex.getRequestHeaders().getFirst("traceparent");
            String line = "served " + (tp == null ? "-" : tp.split("-")[1]) + " "
                + Thread.currentThread().getName() + " " + t0 + " ";
            String kind = isHeavy ? " heavy" : " light";
            int slot = NEXT.getAndIncrement();
            byte[] body = "ok".getBytes();
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            ex.close();
            // Kept, not printed, until the end: the window closes here.
            LINES[slot] = line;
            KINDS[slot] = kind;
            ENDS[slot] = System.nanoTime();
        });
        server.start();
        Thread holder = new Thread(() -> {
            try {
                while (true) {
                    synchronized (LOCK) { Thread.sleep(3); }
                    Thread.sleep(1);
                }
            } catch (InterruptedException e) {
                // done
            }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        int port = server.getAddress().getPort();
        // Warm-up (JIT, class loading), so that only the heavy branch is slow.
        for (int i = 0; i < 200; i++) spin(200_000L);
        for (int i = 0; i < 4; i++) call(port, false, null);
        ExecutorService clients = Executors.newFixedThreadPool(2);
        for (int c = 0; c < 2; c++) {
            final int client = c;
            clients.submit(() -> {
                for (int i = 0; i < perClient; i++) {
                    boolean h = (i + client * 7) % 20 == 0;
                    String tp = client == 0 && i == 1 ? chosen : null;
                    call(port, h, tp);
                }
                return null;
            });
        }
        clients.shutdown();
        clients.awaitTermination(5, TimeUnit.MINUTES);
        server.stop(0);
        // The pooled threads park for the next request until shut down.
        Thread.sleep(20);
        serving.shutdown();
        serving.awaitTermination(1, TimeUnit.MINUTES);
        for (int i = 0; i < NEXT.get(); i++) log(LINES[i] + ENDS[i] + KINDS[i]);
        spans(Executors.newFixedThreadPool(2), 6);
        try {
            ExecutorService virtual = (ExecutorService) Executors.class
                .getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
            spans(virtual, 6);
        } catch (NoSuchMethodException e) {
            log("no virtual threads");
        }
        log("done");
        System.exit(0);
    }

    static void call(int port, boolean heavy, String traceparent) throws Exception {
        URL url = new URL("http://127.0.0.1:" + port + "/work" + (heavy ? "?heavy" : "?light"));
        HttpURLConnection c = (HttpURLConnection) url.openConnection();
        if (traceparent != null) c.setRequestProperty("traceparent", traceparent);
        try (InputStream in = c.getInputStream()) {
            in.readAllBytes();
        }
    }

    /** Nested spans with tags; the inner one sleeps (a virtual thread unmounts). */
    static void spans(ExecutorService pool, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            final int k = i;
            pool.submit(() -> {
                String me = Thread.currentThread().toString();
                long t0 = System.nanoTime();
                long outer = jscope.Span.start("outer-" + k, "k=" + k);
                spin(15_000_000L);
                long t1 = System.nanoTime();
                long inner = jscope.Span.start("inner-" + k, "depth=2");
                spin(10_000_000L);
                Thread.sleep(20);
                spin(10_000_000L);
                jscope.Span.end(inner);
                long t2 = System.nanoTime();
                spin(5_000_000L);
                jscope.Span.end(outer);
                long t3 = System.nanoTime();
                spin(5_000_000L); // after the spans: no request
                allocate();
                spin(5_000_000L);
                log("span outer-" + k + " " + outer + " " + t0 + " " + t3);
                log("span inner-" + k + " " + inner + " " + t1 + " " + t2);
                return null;
            });
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.MINUTES);
    }
}

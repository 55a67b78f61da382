package fw;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.security.MessageDigest;

/** CPU work of a given length and the fixtures' log of who served what when. */
public final class Work {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private Work() {}

    /** Hashes until this thread has used {@code ms} of CPU time. */
    public static int burn(long ms) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[4096];
            long until = THREADS.getCurrentThreadCpuTime() + ms * 1_000_000L;
            int acc = 0;
            while (THREADS.getCurrentThreadCpuTime() < until) {
                for (int i = 0; i < 16; i++) {
                    md.update(buf);
                    byte[] d = md.digest();
                    buf[i] = d[0];
                    acc += d[1];
                }
            }
            return acc;
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** The trace id of a W3C traceparent, "-" for none. */
    public static String traceOf(String traceparent) {
        if (traceparent == null) {
            return "-";
        }
        String[] p = traceparent.split("-");
        return p.length >= 2 ? p[1] : "-";
    }

    /** `serve TRACE THREAD START_NS END_NS`: this thread served TRACE then. */
    public static synchronized void served(String trace, long t0, long t1) {
        System.out.println("serve " + trace + " " + Thread.currentThread().getName() + " " + t0 + " " + t1);
        System.out.flush();
    }

    /**
     * `cpu WHAT NS`: the process's CPU time now (every thread's, the JIT's, the
     * GC's and the agent's too), for the benchmark's measured phase.
     */
    public static synchronized void cpuMark(String what) {
        long ns = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
        System.out.println("cpu " + what + " " + ns);
        System.out.flush();
    }

    private static final java.util.concurrent.atomic.AtomicBoolean MEASURING =
            new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * Marks the measured phase of a server: from its first request of the
     * client's measured ones (`/api/...`) to its `/quit`.
     */
    public static void markPhase(String uri) {
        if (uri.startsWith("/quit")) {
            cpuMark("end");
        } else if (!uri.startsWith("/warm") && MEASURING.compareAndSet(false, true)) {
            cpuMark("start");
        }
    }

    public static void exitSoon() {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                // exit anyway
            }
            System.exit(0);
        });
        t.start();
    }
}

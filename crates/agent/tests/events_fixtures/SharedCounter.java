import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/** JPMT's shared counter: N threads increment one synchronized counter, doing
 *  WORK (default 200) steps of arithmetic under the lock. Prints the JVM's own
 *  total blocked time (ThreadMXBean) for comparison. */
public class SharedCounter {
    static int work = 200;

    static final class Counter {
        long value;

        synchronized void increment() {
            value++;
            // A little work under the lock, so the threads really contend.
            long x = value;
            for (int i = 0; i < work; i++) {
                x = x * 31 + i;
            }
            if (x == 42) {
                value--;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int increments = Integer.parseInt(args[1]);
        if (args.length > 2) work = Integer.parseInt(args[2]);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        mx.setThreadContentionMonitoringEnabled(true);
        Counter counter = new Counter();
        Thread[] workers = new Thread[threads];
        long[] blockedMs = new long[threads];
        for (int t = 0; t < threads; t++) {
            final int me = t;
            workers[t] = new Thread(() -> {
                for (int i = 0; i < increments; i++) {
                    counter.increment();
                }
                blockedMs[me] = mx.getThreadInfo(Thread.currentThread().getId()).getBlockedTime();
            }, "counter-" + t);
        }
        for (Thread w : workers) w.start();
        for (Thread w : workers) w.join();
        long total = 0;
        for (long b : blockedMs) total += b;
        System.out.println("value " + counter.value);
        System.out.println("jmx-blocked-ms " + total);
    }
}

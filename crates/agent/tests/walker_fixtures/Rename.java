/**
 * A thread renamed after it started: it starts as "first-name", renames
 * itself to "second-name" and spins for the given ms of its CPU time.
 */
public class Rename {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long millis = Long.parseLong(args[0]);
        Thread t = new Thread(() -> {
            Thread.currentThread().setName("second-name");
            java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
            long end = mx.getCurrentThreadCpuTime() + millis * 1_000_000L;
            while (mx.getCurrentThreadCpuTime() < end) {
                for (int i = 0; i < 10_000; i++) sink += i * 31L;
            }
        }, "first-name");
        t.start();
        t.join();
        System.out.println("done " + sink);
    }
}

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * One thread cycling through three busy methods: steady() and other() spin 2 ms
 * of CPU time each, grows() spins 2 ms times the factor given as the second
 * argument. Factor 1 splits the samples in thirds; factor 4 gives grows() two
 * thirds and the other two a sixth each. The first argument is the run's length
 * in seconds of the thread's CPU time.
 */
public class Shift {
    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    public static void main(String[] args) {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 2;
        long factor = args.length > 1 ? Long.parseLong(args[1]) : 1;
        long end = THREADS.getCurrentThreadCpuTime() + seconds * 1_000_000_000L;
        java.util.Random random = new java.util.Random(7);
        while (THREADS.getCurrentThreadCpuTime() < end) {
            // Random phase lengths keep the loop from beating with the sampler's tick.
            double scale = 0.5 + random.nextDouble();
            steady(scale);
            grows(scale, factor);
            other(scale);
        }
    }

    // Each method spins in its own loop, so its samples are self samples of
    // its own frame rather than of a shared helper.

    static void steady(double scale) {
        long deadline = THREADS.getCurrentThreadCpuTime() + (long) (2_000_000L * scale);
        long x = sink;
        while (THREADS.getCurrentThreadCpuTime() < deadline) {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink = x;
    }

    static void grows(double scale, long factor) {
        long deadline = THREADS.getCurrentThreadCpuTime() + (long) (2_000_000L * scale * factor);
        long x = sink;
        while (THREADS.getCurrentThreadCpuTime() < deadline) {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink = x;
    }

    static void other(double scale) {
        long deadline = THREADS.getCurrentThreadCpuTime() + (long) (2_000_000L * scale);
        long x = sink;
        while (THREADS.getCurrentThreadCpuTime() < deadline) {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink = x;
    }
}

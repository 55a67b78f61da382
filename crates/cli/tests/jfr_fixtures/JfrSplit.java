import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * CpuSplit's 70/30 split of one thread's CPU time between seventy() and thirty(), for
 * recording with JDK Flight Recorder: it prints how often each was called, so method
 * tracing's counts can be checked exactly.
 */
public class JfrSplit {
    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static volatile long sink;
    static long seventyCalls;
    static long thirtyCalls;

    public static void main(String[] args) {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 3;
        long end = THREADS.getCurrentThreadCpuTime() + seconds * 1_000_000_000L;
        java.util.Random random = new java.util.Random(42);
        while (THREADS.getCurrentThreadCpuTime() < end) {
            double scale = 0.5 + random.nextDouble();
            seventy(scale);
            thirty(scale);
        }
        // Two collections, for the GC events of the recording.
        System.gc();
        System.gc();
        System.out.println("calls seventy=" + seventyCalls + " thirty=" + thirtyCalls);
    }

    static void seventy(double scale) {
        seventyCalls++;
        spin((long) (7_000_000L * scale));
    }

    static void thirty(double scale) {
        thirtyCalls++;
        spin((long) (3_000_000L * scale));
    }

    static void spin(long nanos) {
        long deadline = THREADS.getCurrentThreadCpuTime() + nanos;
        long x = sink;
        while (THREADS.getCurrentThreadCpuTime() < deadline) {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink = x;
    }
}

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Hot's traced empty call, timed in the calling thread's CPU time as well as in wall
 * time: on a shared machine the CPU time leaves out the time the thread waited for a
 * core (or slept waiting for the writer), so agents compared side by side differ by
 * their probes, not by the load. Prints the best of ROUNDS rounds of N calls.
 */
public class HotCpu {
    static void empty() {}

    static void loop(int n) {
        for (int i = 0; i < n; i++) {
            empty();
        }
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        loop(n); // warm-up: compiled before the measured rounds
        double cpu = Double.MAX_VALUE;
        double wall = Double.MAX_VALUE;
        for (int r = 0; r < rounds; r++) {
            long c0 = mx.getCurrentThreadCpuTime();
            long w0 = System.nanoTime();
            loop(n);
            long c1 = mx.getCurrentThreadCpuTime();
            long w1 = System.nanoTime();
            cpu = Math.min(cpu, (double) (c1 - c0) / n);
            wall = Math.min(wall, (double) (w1 - w0) / n);
        }
        System.out.printf("cpu-ns/call %.2f wall-ns/call %.2f%n", cpu, wall);
    }
}

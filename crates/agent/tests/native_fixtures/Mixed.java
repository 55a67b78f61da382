import java.io.FileOutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Spends CPU in Java, in a JNI library (args[0], loaded with System.load), in
 * system calls and in the JIT compilers and GC at start; prints the process's CPU
 * time over the busy window: "window START_NS END_NS CPU_NS AGENT_CPU_NS"
 * (System.nanoTime is CLOCK_MONOTONIC, like the recording's ticks).
 */
public class Mixed {
    static native double spinNative(long millis);

    static volatile double sink;

    static long cpuNs() throws Exception {
        String stat = Files.readString(Path.of("/proc/self/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        // utime and stime are fields 14 and 15, in USER_HZ (100) ticks.
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
    }

    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** The calling thread's CPU time: the busy threads stop after `millis` of it. */
    static long threadCpuNs() {
        return THREADS.getCurrentThreadCpuTime();
    }

    /** CPU time of the profiler's own threads (named jscope-*), which it does not sample. */
    static long agentCpuNs() throws Exception {
        long sum = 0;
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                try {
                    if (!Files.readString(t.resolve("comm")).startsWith("jscope-")) {
                        continue;
                    }
                    String stat = Files.readString(t.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    sum += (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
                } catch (java.io.IOException ended) {
                    // the thread ended
                }
            }
        }
        return sum;
    }

    static double javaSpin(long millis) {
        long end = threadCpuNs() + millis * 1_000_000L;
        double x = 0;
        while (threadCpuNs() < end) {
            for (int i = 0; i < 10_000; i++) {
                x += Math.sqrt(i) * 0.5;
            }
        }
        return x;
    }

    static void nativeCaller(long millis) {
        sink = spinNative(millis); // NATIVE_CALL
    }

    static void syscalls(long millis) {
        long end = threadCpuNs() + millis * 1_000_000L;
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            while (threadCpuNs() < end) {
                for (int i = 0; i < 1000; i++) {
                    out.write(i);
                }
            }
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Much varied code, so the JIT compilers work, and garbage for the GC. */
    static void warmUp() {
        List<String> keep = new ArrayList<>();
        Pattern p = Pattern.compile("(\\d+)-(\\w+)");
        for (int i = 0; i < 200_000; i++) {
            String s = String.format("%d-%s", i, Integer.toHexString(i * 31));
            if (p.matcher(s).matches() && i % 1000 == 0) {
                keep.add(s);
            }
            sink += s.hashCode();
            byte[] garbage = new byte[4096];
            sink += garbage.length;
        }
        sink += keep.size();
        // A live set for the GC threads to mark and move.
        Object[] live = new Object[1_000_000];
        for (int i = 0; i < live.length; i++) {
            live[i] = new int[] {i};
        }
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        sink += live.length;
    }

    /**
     * The agent reads symbol tables on a short-lived thread (jscope-symbols) as it
     * starts; the window opens once it is gone, so that the agent's threads counted
     * at the window's start are the ones counted at its end.
     */
    static void waitForAgentStartUp() throws Exception {
        for (int i = 0; i < 1000 && symbolsThreadRuns(); i++) {
            Thread.sleep(10);
        }
    }

    static boolean symbolsThreadRuns() throws Exception {
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                try {
                    if (Files.readString(t.resolve("comm")).startsWith("jscope-symbols")) {
                        return true;
                    }
                } catch (java.io.IOException ended) {
                    // the thread ended
                }
            }
        }
        return false;
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        long millis = Long.parseLong(args[1]);
        waitForAgentStartUp();
        long t0 = System.nanoTime();
        long c0 = cpuNs();
        long a0 = agentCpuNs();
        Thread[] threads = {
            new Thread(() -> sink = javaSpin(millis), "java-spinner"),
            new Thread(() -> nativeCaller(millis), "native-caller"),
            new Thread(() -> syscalls(millis), "syscaller"),
        };
        for (Thread t : threads) {
            t.start();
        }
        warmUp();
        for (Thread t : threads) {
            t.join();
        }
        long a1 = agentCpuNs();
        long c1 = cpuNs();
        long t1 = System.nanoTime();
        System.out.println("window " + t0 + " " + t1 + " " + (c1 - c0) + " " + (a1 - a0));
    }
}

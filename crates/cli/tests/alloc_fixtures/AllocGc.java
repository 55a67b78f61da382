import java.util.ArrayList;
import java.util.List;

/**
 * Fixture of crates/cli/tests/alloc_gc_jvm.rs (issue 16): known allocations, known
 * object lifetimes, System.gc() beside allocation-driven young collections, and a
 * contended monitor.
 *
 *   alloc N        N byte[1024] (1040 bytes each) at AllocGc.makeBlock
 *   ages N K R     N byte[1024] at makeTemp, every K-th also a long[126] (1040 bytes) at
 *                  makeKept, kept in a ring of R slots: each kept object lives for
 *                  R*K*1040 bytes allocated; System.gc() at the end (the ring stays)
 *   gc G M         G times: M MB of 1 KB garbage, then System.gc()
 *   lock T N       T threads each entering AllocGc.hold N times (1 ms inside)
 *   mix            alloc 20000, System.gc(), lock 4 50
 */
public class AllocGc {
    static volatile Object sink;
    static Object[] ring;
    static final Object LOCK = new Object();
    static long held;

    static byte[] makeBlock() {
        return new byte[1024];
    }

    static byte[] makeTemp() {
        return new byte[1024];
    }

    static long[] makeKept() {
        return new long[126];
    }

    static void alloc(int n) {
        for (int i = 0; i < n; i++) {
            sink = makeBlock();
        }
    }

    static void ages(int n, int k, int r) throws Exception {
        ring = new Object[r];
        int kept = 0;
        for (int i = 0; i < n; i++) {
            if (i % k == 0) {
                ring[kept++ % r] = makeKept();
            } else {
                sink = makeTemp();
            }
        }
        System.gc();
        Thread.sleep(300);
    }

    static void gc(int times, int mb) throws Exception {
        for (int g = 0; g < times; g++) {
            for (int i = 0; i < mb * 1024; i++) {
                sink = makeTemp();
            }
            System.gc();
        }
        Thread.sleep(300);
    }

    static void hold() throws InterruptedException {
        synchronized (LOCK) {
            held++;
            Thread.sleep(1);
        }
    }

    static void lock(int threads, int n) throws Exception {
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                try {
                    for (int i = 0; i < n; i++) {
                        hold();
                    }
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "locker-" + t);
            all.add(th);
            th.start();
        }
        for (Thread th : all) {
            th.join();
        }
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "alloc": alloc(Integer.parseInt(args[1])); break;
            case "ages": ages(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3])); break;
            case "gc": gc(Integer.parseInt(args[1]), Integer.parseInt(args[2])); break;
            case "lock": lock(Integer.parseInt(args[1]), Integer.parseInt(args[2])); break;
            case "mix": alloc(20000); System.gc(); lock(4, 50); break;
            default: throw new IllegalArgumentException(args[0]);
        }
        System.out.println("done " + args[0]);
    }
}

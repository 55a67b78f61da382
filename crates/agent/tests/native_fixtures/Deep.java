import java.util.ArrayList;
import java.util.List;

/**
 * A thread ("deep-caller") spends CPU in a JNI library built without frame
 * pointers (args[0]: Deep.deep -> outer_c -> middle_c -> inner_spin) for
 * args[1] ms of its CPU time, while the main thread keeps the JIT compilers
 * and the GC busy.
 */
public class Deep {
    static native double deep(long millis);

    static volatile double sink;

    static void caller(long millis) {
        sink = deep(millis);
    }

    /** Varied code for the JIT compilers and garbage (and a live set) for the GC. */
    static void churn(Thread until) {
        List<Object> live = new ArrayList<>();
        for (int round = 0; until.isAlive(); round++) {
            for (int i = 0; i < 20_000; i++) {
                String s = Integer.toHexString(i * 31 + round) + "-" + i;
                sink += s.hashCode();
                live.add(new int[] {i});
                if (live.size() > 400_000) {
                    live.clear();
                }
            }
            if (round % 100 == 0) {
                System.gc();
            }
        }
        sink += live.size();
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        long millis = Long.parseLong(args[1]);
        Thread t = new Thread(() -> caller(millis), "deep-caller");
        t.start();
        churn(t);
        t.join();
        System.out.println("done");
    }
}

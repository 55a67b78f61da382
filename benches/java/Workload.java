import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A fixed amount of mixed work (arithmetic, collections, string building) on N
 * threads; prints the elapsed milliseconds. Used to compare run time with and without
 * a profiler in one run of benches/overhead.sh.
 */
public class Workload {
    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 60;
        long start = System.nanoTime();
        List<Thread> ts = new ArrayList<>();
        long[] sink = new long[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            ts.add(new Thread(() -> sink[id] = work(rounds), "worker-" + t));
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        long ms = (System.nanoTime() - start) / 1_000_000;
        long sum = 0;
        for (long s : sink) sum += s;
        System.out.println("elapsed_ms " + ms + " checksum " + sum);
    }

    static long work(int rounds) {
        long acc = 0;
        for (int r = 0; r < rounds; r++) {
            acc += arithmetic(2_000_000);
            acc += collections(20_000);
            acc += strings(5_000);
        }
        return acc;
    }

    static long arithmetic(int n) {
        long h = 1;
        for (int i = 0; i < n; i++) {
            h = h * 31 + (i ^ (h >>> 7));
        }
        return h;
    }

    static long collections(int n) {
        Map<Integer, List<Integer>> m = new HashMap<>();
        for (int i = 0; i < n; i++) {
            m.computeIfAbsent(i % 97, k -> new ArrayList<>()).add(i);
        }
        long s = 0;
        for (List<Integer> l : m.values()) s += l.size();
        return s;
    }

    static long strings(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(i).append(',');
        }
        return sb.toString().hashCode();
    }
}

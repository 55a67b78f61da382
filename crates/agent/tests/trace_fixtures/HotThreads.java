/**
 * Several threads calling a traced empty method in a tight loop, faster than any
 * writer drains a small trace ring: with `traceoverflow=wait` (the default) every
 * call is recorded, with `traceoverflow=drop` the ring drops what does not fit.
 * Args: threads, calls per thread.
 */
public class HotThreads {
    static void empty() {}

    static void loop(int n) {
        for (int i = 0; i < n; i++) {
            empty();
        }
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int calls = Integer.parseInt(args[1]);
        Thread[] all = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            all[t] = new Thread(() -> loop(calls), "hot-" + t);
            all[t].start();
        }
        for (Thread t : all) {
            t.join();
        }
        System.out.println("calls " + (long) threads * calls);
    }
}

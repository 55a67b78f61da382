/**
 * A known call structure for the tracing tests: recursion, an exception thrown
 * through traced frames, a thread started from a traced method, and methods
 * sleeping 1, 2 and 3 ms. Every count the test expects follows from this file.
 */
public class TraceCalls {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static void thrower(int depth) {
        if (depth == 0) {
            throw new IllegalStateException("boom");
        }
        thrower(depth - 1);
    }

    static int catcher() {
        try {
            thrower(3);
            return 0;
        } catch (IllegalStateException e) {
            return 1;
        }
    }

    static void leaf() {}

    static void worker() {
        leaf();
        leaf();
    }

    static void spawn() throws InterruptedException {
        Thread t = new Thread(TraceCalls::worker, "traced-worker");
        t.start();
        t.join();
    }

    static void sleepMs(int ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    public static void main(String[] args) throws Exception {
        int f = fib(10);
        int c = catcher();
        spawn();
        for (int ms = 1; ms <= 3; ms++) {
            long t0 = System.nanoTime();
            sleepMs(ms);
            long t1 = System.nanoTime();
            System.err.println("slept " + ms + " " + (t1 - t0));
        }
        System.out.println("fib " + f + " caught " + c);
    }
}

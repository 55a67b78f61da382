import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.locks.LockSupport;

/**
 * A park-heavy workload: PAIRS pairs of threads pass a token back and forth
 * ROUNDS times through two one-slot queues, so every hand-over parks the thread
 * that waits for it (ArrayBlockingQueue.take: a Condition await, i.e.
 * LockSupport.park). Prints the elapsed milliseconds. Used by benches/park.sh.
 *
 * {@code PingPong self N}: one thread unparks itself and parks N times; each park
 * returns at once (the permit is there), so the time per park is what a park
 * costs when it does not wait, hooks included.
 */
public class PingPong {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("self")) {
            selfParks(Integer.parseInt(args[1]));
            return;
        }
        int pairs = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        long start = System.nanoTime();
        Thread[] threads = new Thread[2 * pairs];
        for (int p = 0; p < pairs; p++) {
            BlockingQueue<Integer> ping = new ArrayBlockingQueue<>(1);
            BlockingQueue<Integer> pong = new ArrayBlockingQueue<>(1);
            threads[2 * p] = new Thread(() -> play(ping, pong, rounds, true), "ping-" + p);
            threads[2 * p + 1] = new Thread(() -> play(pong, ping, rounds, false), "pong-" + p);
        }
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        long ms = (System.nanoTime() - start) / 1_000_000;
        System.out.println("elapsed_ms " + ms + " handovers " + 2L * pairs * rounds);
    }

    static void selfParks(int n) {
        Thread me = Thread.currentThread();
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            LockSupport.unpark(me);
            LockSupport.park();
        }
        long ns = System.nanoTime() - start;
        System.out.println("elapsed_ms " + ns / 1_000_000 + " ns_per_park " + ns / n);
    }

    static void play(BlockingQueue<Integer> in, BlockingQueue<Integer> out, int rounds, boolean serves) {
        try {
            if (serves) out.put(0);
            for (int i = 0; i < rounds; i++) {
                int v = in.take();
                if (!serves || i + 1 < rounds) out.put(v + 1);
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }
}

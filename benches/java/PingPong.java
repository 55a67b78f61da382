import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * A park-heavy workload: PAIRS pairs of threads pass a token back and forth
 * ROUNDS times through two one-slot queues, so every hand-over parks the thread
 * that waits for it (ArrayBlockingQueue.take: a Condition await, i.e.
 * LockSupport.park). Prints the elapsed milliseconds. Used by benches/park.sh.
 */
public class PingPong {
    public static void main(String[] args) throws Exception {
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

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Eight threads started in one loop, for the Thread.start -> run link (issue 15):
 * w0, w2, w3, w5 and w7 from one call site in main, w1 and w6 from the traced
 * helper `launch`, w4 by a thread pool that `viaPool` feeds. No thread makes a
 * traced call before all eight have started, and they then make them in the
 * scrambled order RUN_ORDER, so timing cannot pair a thread with its start.
 * Prints the names in start order.
 */
public class Starts {
    static final int[] RUN_ORDER = {3, 0, 6, 1, 7, 4, 2, 5};
    static final Object lock = new Object();
    /** Position in RUN_ORDER of the thread allowed to work; -1 until all started. */
    static int turn = -1;

    /** Each started thread's one traced call. */
    static int work(int index) {
        return index * 2;
    }

    static void awaitTurn(int index) {
        synchronized (lock) {
            while (turn < 0 || RUN_ORDER[turn] != index) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }
        }
    }

    static void done() {
        synchronized (lock) {
            turn++;
            lock.notifyAll();
        }
    }

    static Runnable body(int index) {
        return () -> {
            awaitTurn(index);
            work(index);
            done();
        };
    }

    /** A traced helper that starts a thread. */
    static Thread launch(int index) {
        Thread t = new Thread(body(index), "w" + index);
        t.start();
        return t;
    }

    /** A traced method whose task makes a pool start its worker thread. */
    static ExecutorService viaPool(int index) {
        ExecutorService pool = Executors.newSingleThreadExecutor(r -> new Thread(r, "w" + index));
        pool.execute(body(index));
        return pool;
    }

    public static void main(String[] args) throws Exception {
        List<Thread> threads = new ArrayList<>();
        ExecutorService pool = null;
        StringBuilder names = new StringBuilder("started");
        for (int i = 0; i < 8; i++) {
            if (i == 4) {
                pool = viaPool(i);
            } else if (i == 1 || i == 6) {
                threads.add(launch(i));
            } else {
                Thread t = new Thread(body(i), "w" + i);
                t.start();
                threads.add(t);
            }
            names.append(" w").append(i);
        }
        synchronized (lock) {
            turn = 0;
            lock.notifyAll();
        }
        for (Thread t : threads) {
            t.join();
        }
        pool.shutdown();
        pool.awaitTermination(60, TimeUnit.SECONDS);
        System.out.println(names);
    }
}

import java.lang.reflect.Method;
import java.util.concurrent.locks.LockSupport;

/**
 * N virtual threads (JDK 21+), each calling a traced method three times; every
 * call computes a little (so cpu samples land in it) and sleeps 1 ms, so the
 * thread unmounts in the middle of the call and may resume on another carrier;
 * in every fifth thread (i % 5 == 0) each call also parks at least 1 ms with
 * LockSupport.parkNanos. Even-numbered threads are named vt-i, the others have
 * no name. Written against JDK 17 (the fixtures' release), so the virtual
 * thread API is reached by reflection; on JDK 17 it prints "no virtual threads".
 */
public class VThreads {
    static volatile long sink;

    static long spin(int k) {
        long x = k;
        for (int i = 0; i < 40_000; i++) {
            x += (x << 1) ^ (x >>> 7) ^ i;
        }
        return x;
    }

    static long work(int k, boolean park) throws InterruptedException {
        long x = spin(k);
        Thread.sleep(1);
        if (park) {
            // At least 1 ms parked: a park may return at once (a permit left
            // by the sleep's wake-up) or early, so it parks until the deadline.
            long until = System.nanoTime() + 1_000_000;
            for (long left = 1_000_000; left > 0; left = until - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
        }
        return x;
    }

    static void task(boolean park) {
        try {
            for (int k = 0; k < 3; k++) {
                sink += work(k, park);
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            System.out.println("no virtual threads");
            return;
        }
        Class<?> builder = Class.forName("java.lang.Thread$Builder");
        Method name = builder.getMethod("name", String.class);
        Method unstarted = builder.getMethod("unstarted", Runnable.class);
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            Object b = ofVirtual.invoke(null);
            if (i % 2 == 0) {
                b = name.invoke(b, "vt-" + i);
            }
            boolean park = i % 5 == 0;
            threads[i] = (Thread) unstarted.invoke(b, (Runnable) () -> task(park));
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("done " + n);
    }
}

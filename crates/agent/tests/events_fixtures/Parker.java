import java.util.Date;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/** Parks of known lengths: a thread blocked ~HOLD ms (default 200) on a
 *  ReentrantLock another thread holds, another giving up on a second one after 40 ms
 *  (tryLock: parkNanos with a blocker), a parkNanos(50 ms), a parkUntil(now + 80
 *  ms), a Condition.awaitUntil(now + 60 ms) (parkUntil with a blocker), and
 *  SHORT (default 300) parkNanos(100 us) that stay under any threshold of a few
 *  ms. Prints how long each long park really took. */
public class Parker {
    static final ReentrantLock LOCK = new ReentrantLock();
    /** Held with LOCK; tried alone, so that giving up on it (which wakes the
     *  next node of the queue) cannot wake the waiter of LOCK. */
    static final ReentrantLock TRIED = new ReentrantLock();
    static final ReentrantLock OTHER = new ReentrantLock();
    static final Condition NEVER = OTHER.newCondition();

    /** System.nanoTime (CLOCK_MONOTONIC, as the agent's timestamps) when the waiter
     *  called lock() and when the holder let go of it. */
    static volatile long waiterStartNs, releasedNs;

    static void waitForLock() {
        waiterStartNs = System.nanoTime();
        LOCK.lock();
        LOCK.unlock();
    }

    static void timedPark() {
        LockSupport.parkNanos(50_000_000L);
    }

    static void untilPark() {
        LockSupport.parkUntil(System.currentTimeMillis() + 80);
    }

    static void giveUpOnLock() {
        try {
            if (TRIED.tryLock(40, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("the lock is held");
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    static void awaitDeadline() {
        OTHER.lock();
        try {
            while (NEVER.awaitUntil(new Date(System.currentTimeMillis() + 60))) {
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        } finally {
            OTHER.unlock();
        }
    }

    static void shortParks(int n) {
        for (int i = 0; i < n; i++) {
            LockSupport.parkNanos(100_000L);
        }
    }

    static long millisOf(Runnable r) {
        long t0 = System.nanoTime();
        r.run();
        return (System.nanoTime() - t0) / 1_000_000;
    }

    /**
     * Waits for a latch by sleeping, not parking: the fixture's own coordination
     * (which a loaded machine makes last) is not among the parks it measures.
     */
    static void awaitUnparked(CountDownLatch latch) throws InterruptedException {
        while (latch.getCount() > 0) {
            Thread.sleep(1);
        }
    }

    public static void main(String[] args) throws Exception {
        long hold = args.length > 0 ? Long.parseLong(args[0]) : 200;
        int shorts = args.length > 1 ? Integer.parseInt(args[1]) : 300;
        CountDownLatch held = new CountDownLatch(1);
        // The holder keeps TRIED until the trier has given up on it, however late a
        // loaded machine starts the trier.
        CountDownLatch gaveUp = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            LOCK.lock();
            TRIED.lock();
            try {
                held.countDown();
                Thread.sleep(hold);
                awaitUnparked(gaveUp);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            } finally {
                TRIED.unlock();
                releasedNs = System.nanoTime();
                LOCK.unlock();
            }
        }, "holder");
        holder.start();
        awaitUnparked(held);
        long[] waited = new long[1];
        Thread waiter = new Thread(() -> waited[0] = millisOf(Parker::waitForLock), "waiter");
        waiter.start();
        long[] tried = new long[1];
        Thread trier = new Thread(() -> {
            try {
                tried[0] = millisOf(Parker::giveUpOnLock);
            } finally {
                gaveUp.countDown();
            }
        }, "trier");
        trier.start();
        trier.join();
        long timed = millisOf(Parker::timedPark);
        long until = millisOf(Parker::untilPark);
        long awaited = millisOf(Parker::awaitDeadline);
        long shortsStart = System.nanoTime();
        shortParks(shorts);
        long shortsMicros = (System.nanoTime() - shortsStart) / 1_000;
        waiter.join();
        holder.join();
        System.out.println("waited " + waited[0]);
        System.out.println("timed " + timed);
        System.out.println("until " + until);
        System.out.println("tried " + tried[0]);
        System.out.println("awaited " + awaited);
        System.out.println("shorts-us " + shortsMicros);
        System.out.println("waiter-start-ns " + waiterStartNs);
        System.out.println("released-ns " + releasedNs);
    }
}

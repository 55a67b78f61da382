import java.util.Random;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * An M/M/c queue: tasks arrive with exponential inter-arrival times (rate
 * LAMBDA per second, from a seeded Random), each sleeps an exponential service
 * time (rate MU per second), and a fixed pool of C workers runs them. Every task
 * measures its own time in the queue (submit -> run start); the mean is printed.
 *
 * A loaded machine wakes threads late; a late worker would stretch every service
 * time and push the pool above its nominal utilisation, where waits grow
 * steeply. So each worker keeps the schedule of an ideal M/M/c pool: a task's
 * service ends at max(its arrival, the worker's previous end) + its exponential
 * time, on the ideal clock, however late the worker started it. The queue itself
 * is the real ThreadPoolExecutor's, and the measured waits are the real ones.
 *
 * Usage: PoolApp C LAMBDA MU TASKS SEED
 */
public class PoolApp {
    static final AtomicLong queuedNs = new AtomicLong();
    static final AtomicLong servedNs = new AtomicLong();
    /** When this worker's previous task ended on the ideal clock. */
    static final ThreadLocal<long[]> idealFree = ThreadLocal.withInitial(() -> new long[1]);

    static final class Task implements Runnable {
        final long arrival;
        final long serviceNs;
        final long submitted;

        Task(long arrival, long serviceNs, long submitted) {
            this.arrival = arrival;
            this.serviceNs = serviceNs;
            this.submitted = submitted;
        }

        @Override
        public void run() {
            long start = System.nanoTime();
            queuedNs.addAndGet(start - submitted);
            long[] free = idealFree.get();
            free[0] = Math.max(arrival, free[0]) + serviceNs;
            sleepUntil(free[0]);
            servedNs.addAndGet(System.nanoTime() - start);
        }
    }

    /** Parks until shortly before `deadline` and spins the rest: parkNanos wakes
     *  up to ~100us late (timer slack), which would stretch the exponential times. */
    static void sleepUntil(long deadline) {
        long left;
        while ((left = deadline - System.nanoTime()) > SPIN_NS) {
            LockSupport.parkNanos(left - SPIN_NS);
        }
        while (deadline - System.nanoTime() > 0) {
            Thread.onSpinWait();
        }
    }

    static final long SPIN_NS = 150_000;

    public static void main(String[] args) throws Exception {
        int c = Integer.parseInt(args[0]);
        double lambda = Double.parseDouble(args[1]);
        double mu = Double.parseDouble(args[2]);
        int tasks = Integer.parseInt(args[3]);
        Random random = new Random(Long.parseLong(args[4]));
        ThreadPoolExecutor pool = new ThreadPoolExecutor(
            c, c, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<Runnable>());
        // Every task goes through the queue: no worker is created for a task.
        pool.prestartAllCoreThreads();
        long start = System.nanoTime();
        long at = start;
        for (int i = 0; i < tasks; i++) {
            at += (long) (-Math.log(1.0 - random.nextDouble()) / lambda * 1e9);
            long serviceNs = (long) (-Math.log(1.0 - random.nextDouble()) / mu * 1e9);
            sleepUntil(at);
            pool.execute(new Task(at, serviceNs, System.nanoTime()));
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.MINUTES);
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("mean_queue_ns %.0f mean_service_ns %.0f tasks %d seconds %.3f%n",
            (double) queuedNs.get() / tasks, (double) servedNs.get() / tasks, tasks, seconds);
    }
}

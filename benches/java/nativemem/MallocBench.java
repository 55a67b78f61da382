/**
 * An allocation-heavy native workload for benches/nativemem.sh: THREADS Java
 * threads each call into C, which allocates, touches and frees blocks of 16
 * bytes to 16 KiB (malloc, calloc, realloc) ROUNDS million times, keeping 4096
 * blocks alive in a ring as a cache would. WORK: `none` leaves the allocator
 * alone (its worst case), `touch` fills each block and reads it back, and
 * `compute` allocates blocks of 16 B to 1 KiB and hashes every byte of each,
 * as a parser or codec would. Prints the elapsed time measured inside the
 * program.
 *   java MallocBench THREADS ROUNDS [none|touch|compute]
 */
public class MallocBench {
    static native long churn(int rounds, int seed, int work);

    public static void main(String[] args) throws Exception {
        System.loadLibrary("mallocbench");
        int threads = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]) * 1_000_000;
        int work = args.length > 2 ? java.util.List.of("none", "touch", "compute").indexOf(args[2]) : 0;
        if (work < 0) {
            throw new IllegalArgumentException(args[2]);
        }
        Thread[] ts = new Thread[threads];
        long[] sums = new long[threads];
        long start = System.nanoTime();
        for (int i = 0; i < threads; i++) {
            int me = i;
            ts[i] = new Thread(() -> sums[me] = churn(rounds, me + 1, work), "churn-" + i);
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        long sum = 0;
        for (long s : sums) {
            sum += s;
        }
        System.out.println("elapsed_ms " + ms + " bytes " + sum);
    }
}

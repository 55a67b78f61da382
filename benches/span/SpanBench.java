/**
 * jscope.Span start and end in a tight loop: ns per pair. Run without the agent
 * (start returns 0, end(0) returns) and with it. Args: ROUNDS PAIRS.
 * Prints one line per round: `ns_per_pair X`.
 */
public class SpanBench {
    static long sink;

    static long pairs(long n) {
        long acc = 0;
        for (long i = 0; i < n; i++) {
            long s = jscope.Span.start("bench");
            acc += s;
            jscope.Span.end(s);
        }
        return acc;
    }

    public static void main(String[] args) {
        int rounds = Integer.parseInt(args[0]);
        long n = Long.parseLong(args[1]);
        sink += pairs(n / 10); // warm up: compiled before the rounds
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            sink += pairs(n);
            long t1 = System.nanoTime();
            System.out.printf("ns_per_pair %.3f%n", (t1 - t0) / (double) n);
        }
        if (sink == 42) System.out.println("");
    }
}

/** A traced empty method called in a tight loop: the cost of one traced call. */
public class Hot {
    static int sink;

    static void empty() {}

    static long loop(int n) {
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            empty();
        }
        return System.nanoTime() - start;
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        loop(n); // warm-up: compiled before the measured run
        long ns = loop(n);
        System.out.println("ns/call " + (double) ns / n);
    }
}

/**
 * StringBuilder.delete on a long builder for the given milliseconds: most of
 * the time is in the JVM's arraycopy stub, where AsyncGetCallTrace finds no
 * Java frame. Prints "done" at the end.
 */
public class StubLoop {
    static volatile long sink;

    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 200_000; i++) sb.append('x');
        while (System.nanoTime() < end) {
            for (int i = 0; i < 200; i++) {
                sb.delete(0, 1);
                sb.append('y');
            }
        }
        sink += sb.length();
        System.out.println("done");
    }
}

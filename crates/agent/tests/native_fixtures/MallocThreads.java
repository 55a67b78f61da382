/**
 * Native threads of a JNI library (args[0]) that never touch the JVM, spending
 * their CPU time in malloc: args[1] of them one after another, args[2] ms of
 * CPU time each.
 */
public class MallocThreads {
    static native int run(int threads, long millis);

    public static void main(String[] args) {
        System.load(args[0]);
        int ran = run(Integer.parseInt(args[1]), Long.parseLong(args[2]));
        System.out.println("threads " + ran);
    }
}

/**
 * Native frames between Java frames: a thread ("between-caller") calls the
 * native Between.outer, whose C code calls back the Java method
 * Between.callback through JNI, which calls the native Between.spin, which
 * spins in C (args[0]: the library; args[1]: ms of the thread's CPU time).
 */
public class Between {
    static native void outer(long millis);

    static native double spin(long iterations);

    static volatile double sink;

    /** Called from Java_Between_outer. */
    static void callback() {
        sink += spin(2_000_000);
    }

    static void caller(long millis) {
        outer(millis);
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        long millis = Long.parseLong(args[1]);
        Thread t = new Thread(() -> caller(millis), "between-caller");
        t.start();
        t.join();
        System.out.println("sink " + sink);
    }
}

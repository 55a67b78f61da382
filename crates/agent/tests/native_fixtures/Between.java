/**
 * Native frames between Java frames: a thread ("between-caller") calls the
 * native Between.outer, whose C code calls back the Java method
 * Between.callback through JNI, which calls the native Between.spin, which
 * spins in C (args[0]: the library; args[1]: ms of the thread's CPU time).
 * Then a thread ("between-init") spins in C from a static initialiser, which
 * the VM itself calls: no JNI function owns the VM frames between.
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

    /** Initialised by the VM's own call into Java: its spin has no Java_ caller. */
    static class Init {
        static {
            for (int i = 0; i < 60; i++) {
                sink += spin(2_000_000);
            }
        }

        static void touch() {}
    }

    static void initCaller() {
        Init.touch();
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        long millis = Long.parseLong(args[1]);
        Thread t = new Thread(() -> caller(millis), "between-caller");
        t.start();
        t.join();
        Thread init = new Thread(Between::initCaller, "between-init");
        init.start();
        init.join();
        System.out.println("sink " + sink);
    }
}

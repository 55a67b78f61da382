import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Native memory and native lock paths for the nativemem and nativelock tests,
 * run as a list of actions: load (System.loadLibrary("nativemem") from
 * java.library.path), leak, churn, grow, contend, thread, fork, hammer:MS (a
 * thread calling every hooked function from threads of its own), soak:MS
 * (four threads of JDK work with native memory: zip streams, inflaters,
 * direct buffers, contended monitors), join (waits for those threads),
 * await:FILE (wait until FILE exists: the test attaches meanwhile), sleep:MS,
 * allocator (prints the library whose malloc the process calls), ready.
 * Each native method has a Java caller of its own, the path the tests look for.
 */
public class NativeMem {
    /** 64 MiB in 256-byte blocks, never freed. */
    static native long leak(int blocks, int size);

    /** 256 MiB in blocks of 64 to 4031 bytes, malloc and calloc, each freed at once. */
    static native long churn(int blocks);

    /** Buffers grown by realloc from 1 KiB by doubling, then freed; returns bytes asked for. */
    static native long grow(int chains, int steps);

    /** Two threads contending on one pthread mutex; returns their own measure of ns blocked. */
    static native long contend(int rounds, int holdMicros);

    /** A thread the JVM does not know leaks 8 MiB in 1 KiB blocks. */
    static native long nativeThreadLeak();

    /** fork(): the child allocates and frees, then exits; returns its exit status. */
    static native int forkAndAllocate();

    /** The file name of the library whose malloc the process calls. */
    static native String allocator();

    /** Threads of its own calling every hooked function (each block freed) for millis. */
    static native long hammer(int threads, int millis);

    static final java.util.List<Thread> started = new java.util.ArrayList<>();

    static void leakPath() {
        System.out.println("leaked " + leak(262144, 256));
    }

    static void churnPath() {
        System.out.println("churned " + churn(131072));
    }

    static void growPath() {
        System.out.println("grew " + grow(64, 11));
    }

    static void contendPath() {
        System.out.println("blocked " + contend(400, 500));
    }

    static void nativeThreadPath() {
        System.out.println("thread leaked " + nativeThreadLeak());
    }

    static void forkPath() {
        System.out.println("child exited " + forkAndAllocate());
    }

    public static void main(String[] args) throws Exception {
        for (String action : args) {
            if (action.equals("load")) {
                System.loadLibrary("nativemem");
            } else if (action.equals("leak")) {
                leakPath();
            } else if (action.equals("churn")) {
                churnPath();
            } else if (action.equals("grow")) {
                growPath();
            } else if (action.equals("contend")) {
                contendPath();
            } else if (action.equals("thread")) {
                nativeThreadPath();
            } else if (action.equals("fork")) {
                forkPath();
            } else if (action.startsWith("hammer:")) {
                int millis = Integer.parseInt(action.substring(7));
                Thread t = new Thread(() -> {
                    long calls = hammer(4, millis);
                    // Wall-clock milliseconds at the hammer's end, to compare with
                    // the recording's end.
                    System.out.println("hammer_end_ms " + System.currentTimeMillis());
                    System.out.println("hammered " + calls);
                }, "hammer");
                t.start();
                started.add(t);
            } else if (action.startsWith("soak:")) {
                int millis = Integer.parseInt(action.substring(5));
                for (int i = 0; i < 4; i++) {
                    Thread t = new Thread(() -> Soak.run(millis), "soak-" + i);
                    t.start();
                    started.add(t);
                }
            } else if (action.equals("join")) {
                for (Thread t : started) {
                    t.join();
                }
            } else if (action.equals("allocator")) {
                System.out.println("allocator " + allocator());
            } else if (action.equals("ready")) {
                System.out.println("ready");
            } else if (action.startsWith("await:")) {
                Path file = Path.of(action.substring(6));
                long until = System.nanoTime() + 60_000_000_000L;
                while (!Files.exists(file) && System.nanoTime() < until) {
                    Thread.sleep(20);
                }
            } else if (action.startsWith("sleep:")) {
                Thread.sleep(Long.parseLong(action.substring(6)));
            } else {
                throw new IllegalArgumentException(action);
            }
            System.out.flush();
        }
    }
}

import java.lang.reflect.Method;

/**
 * A virtual thread (JDK 21+, started through reflection so this compiles for
 * Java 11) spinning in VirtualSpin.spin for the given ms of its CPU time, on a
 * carrier of the default scheduler; prints "virtual" once it ran.
 */
public class VirtualSpin {
    static volatile long sink;

    static void spin(long millis) {
        long end = System.nanoTime() + millis * 1_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) sink += i * 31L;
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = Long.parseLong(args[0]);
        Method start = Thread.class.getMethod("startVirtualThread", Runnable.class);
        Thread t = (Thread) start.invoke(null, (Runnable) () -> spin(millis));
        t.join();
        System.out.println("virtual " + sink);
    }
}

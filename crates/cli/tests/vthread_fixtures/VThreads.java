import java.lang.reflect.Method;

/**
 * N virtual threads (JDK 21+), each calling a traced method three times; every
 * call sleeps 1 ms, so the thread unmounts in the middle of the call and may
 * resume on another carrier. Even-numbered threads are named vt-i, the others
 * have no name. Written against JDK 17 (the fixtures' release), so the virtual
 * thread API is reached by reflection; on JDK 17 it prints "no virtual threads".
 */
public class VThreads {
    static volatile long sink;

    static long work(int k) throws InterruptedException {
        Thread.sleep(1);
        return k;
    }

    static void task() {
        try {
            for (int k = 0; k < 3; k++) {
                sink += work(k);
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            System.out.println("no virtual threads");
            return;
        }
        Class<?> builder = Class.forName("java.lang.Thread$Builder");
        Method name = builder.getMethod("name", String.class);
        Method unstarted = builder.getMethod("unstarted", Runnable.class);
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            Object b = ofVirtual.invoke(null);
            if (i % 2 == 0) {
                b = name.invoke(b, "vt-" + i);
            }
            threads[i] = (Thread) unstarted.invoke(b, (Runnable) VThreads::task);
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("done " + n);
    }
}

/** Runs for the given ms: two threads contend on one lock while allocating, and
 *  main calls System.gc() every 100 ms. For attaching to a running JVM. */
public class Busy {
    static final Object LOCK = new Object();
    static long shared;
    static volatile boolean done;

    public static void main(String[] args) throws Exception {
        long until = System.currentTimeMillis() + Long.parseLong(args[0]);
        Runnable work = () -> {
            while (!done) {
                synchronized (LOCK) {
                    byte[] b = new byte[4096];
                    for (int i = 0; i < 2000; i++) shared += b[i & 4095] + i;
                }
            }
        };
        Thread a = new Thread(work, "busy-a");
        Thread b = new Thread(work, "busy-b");
        a.start();
        b.start();
        while (System.currentTimeMillis() < until) {
            Thread.sleep(100);
            System.gc();
        }
        done = true;
        a.join();
        b.join();
        System.out.println("shared " + shared);
    }
}

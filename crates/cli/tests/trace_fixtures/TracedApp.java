/**
 * A known call structure for `jscope tree` and `jscope stats` on a real JVM:
 * recursion, an exception thrown through two traced frames, a thread started from
 * a traced method, and a method sleeping 1, 2 and 3 ms.
 */
public class TracedApp {
    static int depth(int n) {
        return n == 0 ? 0 : 1 + depth(n - 1);
    }

    static void fail(int n) {
        if (n == 0) {
            throw new IllegalArgumentException("deep");
        }
        fail(n - 1);
    }

    static boolean rescue() {
        try {
            fail(1);
            return false;
        } catch (IllegalArgumentException e) {
            return true;
        }
    }

    static void task() {
        depth(2);
    }

    static void launch() throws InterruptedException {
        Thread t = new Thread(TracedApp::task, "traced-task");
        t.start();
        t.join();
    }

    static void pause(int ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    public static void main(String[] args) throws Exception {
        int d = depth(3);
        boolean r = rescue();
        launch();
        pause(1);
        pause(2);
        pause(3);
        System.out.println("depth " + d + " rescued " + r);
    }
}

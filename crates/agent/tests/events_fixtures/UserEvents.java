/** Logs user events through jscope.Events (the agent's class at run time).
 *  `count N`: N instant events "tick", N/10 "value" events carrying i, and
 *  N/100 begin/end pairs of "phase", on two threads.
 *  `bench N`: N events in a tight loop; prints the ns per event. */
public class UserEvents {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[1]);
        if (args[0].equals("bench")) {
            bench(n);
            return;
        }
        int tick = jscope.Events.register("tick");
        int value = jscope.Events.register("value");
        int phase = jscope.Events.register("phase");
        if (jscope.Events.register("tick") != tick) throw new AssertionError("ids differ");
        Thread other = new Thread(() -> {
            for (int i = 0; i < n / 2; i++) jscope.Events.log(tick);
        }, "logger");
        other.start();
        for (int i = 0; i < n - n / 2; i++) jscope.Events.log(tick);
        for (int i = 0; i < n / 10; i++) jscope.Events.log(value, i);
        for (int i = 0; i < n / 100; i++) {
            jscope.Events.begin(phase);
            Thread.sleep(1);
            jscope.Events.end(phase);
        }
        other.join();
        System.out.println("logged " + n);
    }

    /** Times n events in batches of 10000 (a thread's ring holds 16384), with a
     *  pause after each so the agent's writer drains the ring and nothing is
     *  dropped: the figure is the cost of recording, not of dropping. */
    static void bench(int n) throws InterruptedException {
        int id = jscope.Events.register("bench");
        final int batch = 10_000;
        for (int w = 0; w < 50; w++) { // warm-up: compile the loop and the call
            for (int i = 0; i < batch; i++) jscope.Events.log(id);
            Thread.sleep(15);
        }
        Thread.sleep(50);
        long total = 0;
        for (int done = 0; done < n; done += batch) {
            long t0 = System.nanoTime();
            for (int i = 0; i < batch; i++) jscope.Events.log(id);
            total += System.nanoTime() - t0;
            Thread.sleep(15);
        }
        int logged = ((n + batch - 1) / batch) * batch;
        System.out.printf("ns-per-event %.1f%n", (double) total / logged);
        System.out.println("bench-events " + (logged + 50 * batch));
    }
}

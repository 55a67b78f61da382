import java.util.ArrayDeque;

/** A program for the event commands: `counter T N` (JPMT's shared counter: T threads
 *  increment one synchronized Tally N times each), `gc K` (System.gc() K times),
 *  `user N` (the user event "order" logged N times), `alloc R` (R 64 KiB buffers from
 *  makeBuffer), `queue N` (a producer/consumer handing over N items with wait and
 *  notify), or `all` (each of them, smaller). */
public class EventsApp {
    static final class Tally {
        long value;

        synchronized void increment() {
            value++;
            long x = value; // a little work under the lock, so threads really contend
            for (int i = 0; i < 200; i++) {
                x = x * 31 + i;
            }
            if (x == 42) {
                value--;
            }
        }
    }

    static final class Mailbox {
        final ArrayDeque<Integer> items = new ArrayDeque<>();

        synchronized void put(int v) {
            items.add(v);
            notifyAll();
        }

        synchronized int take() throws InterruptedException {
            while (items.isEmpty()) {
                wait(200);
            }
            return items.poll();
        }
    }

    static long sink;

    static void counter(int threads, int n) throws InterruptedException {
        Tally tally = new Tally();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            workers[t] = new Thread(() -> {
                for (int i = 0; i < n; i++) tally.increment();
            }, "counter-" + t);
        }
        for (Thread w : workers) w.start();
        for (Thread w : workers) w.join();
        System.out.println("tally " + tally.value);
    }

    static void gc(int k) {
        for (int i = 0; i < k; i++) {
            byte[] garbage = new byte[1 << 20];
            garbage[0] = (byte) i;
            System.gc();
        }
    }

    static void user(int n) {
        int order = jscope.Events.register("order");
        for (int i = 0; i < n; i++) jscope.Events.log(order, i);
    }

    static byte[] makeBuffer() {
        byte[] b = new byte[64 * 1024];
        b[b.length - 1] = 1;
        return b;
    }

    static void alloc(int rounds) {
        for (int r = 0; r < rounds; r++) sink += makeBuffer().length;
    }

    static void queue(int n) throws InterruptedException {
        Mailbox box = new Mailbox();
        Thread consumer = new Thread(() -> {
            try {
                for (int i = 0; i < n; i++) sink += box.take();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "consumer");
        consumer.start();
        for (int i = 0; i < n; i++) {
            Thread.sleep(5);
            box.put(i);
        }
        consumer.join();
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        switch (args[0]) {
            case "counter" -> counter(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
            case "gc" -> gc(n);
            case "user" -> user(n);
            case "alloc" -> alloc(n);
            case "queue" -> queue(n);
            case "all" -> {
                counter(4, 50_000);
                queue(20);
                alloc(2_000);
                user(100);
                gc(3);
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
        System.out.println("done " + args[0]);
    }
}

package demo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A small multi-threaded shop for jscope to profile: order workers price baskets
 * (CPU), share one synchronized inventory (lock contention), a reporter ranks
 * products (CPU and allocation) and an auditor mostly sleeps.
 * Usage: java -cp CLASSES demo.Shop [seconds]
 */
public class Shop {
    static final int PRODUCTS = 2_000;
    static final Inventory inventory = new Inventory(PRODUCTS);
    static volatile boolean open = true;

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        ThreadGroup shopFloor = new ThreadGroup("shop-floor");
        List<Thread> threads = new ArrayList<>();
        for (int i = 1; i <= 2; i++) {
            threads.add(new Thread(shopFloor, new OrderWorker(), "order-worker-" + i));
        }
        threads.add(new Thread(shopFloor, Shop::report, "reporter"));
        threads.add(new Thread(Shop::audit, "auditor"));
        threads.forEach(Thread::start);
        Thread.sleep(seconds * 1000L);
        open = false;
        for (Thread t : threads) {
            t.join();
        }
        System.out.printf("shop closed: %d orders, revenue %d%n", inventory.orders(), inventory.revenue());
    }

    static final class OrderWorker implements Runnable {
        public void run() {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            while (open) {
                int[] basket = new int[8];
                for (int i = 0; i < basket.length; i++) {
                    basket[i] = rnd.nextInt(PRODUCTS);
                }
                long total = price(basket);
                inventory.sell(basket, total);
            }
        }

        /** Deliberately expensive pricing: the shop's main CPU hot spot. */
        static long price(int[] basket) {
            long total = 0;
            for (int product : basket) {
                total += discount(product, 40_000);
            }
            return total;
        }

        static long discount(int product, int rounds) {
            long h = product;
            for (int r = 0; r < rounds; r++) {
                h = h * 6364136223846793005L + 1442695040888963407L;
                h ^= (h >>> 29);
            }
            return 100 + Math.floorMod(h, 900);
        }
    }

    static final class Inventory {
        private final int[] stock;
        private long orders;
        private long revenue;

        Inventory(int products) {
            stock = new int[products];
        }

        synchronized void sell(int[] basket, long total) {
            for (int product : basket) {
                stock[product]++;
            }
            orders++;
            revenue += total;
            long spin = System.nanoTime() + 200_000;
            while (System.nanoTime() < spin) {
                // bookkeeping while holding the lock: makes the workers contend
            }
        }

        synchronized long orders() {
            return orders;
        }

        synchronized long revenue() {
            return revenue;
        }

        synchronized int[] snapshot() {
            return stock.clone();
        }
    }

    static void report() {
        while (open) {
            rank(inventory.snapshot());
            sleepQuietly(50);
        }
    }

    static List<Map.Entry<Integer, Integer>> rank(int[] stock) {
        Map<Integer, Integer> sold = new HashMap<>();
        for (int i = 0; i < stock.length; i++) {
            sold.put(i, stock[i]);
        }
        List<Map.Entry<Integer, Integer>> ranking = new ArrayList<>(sold.entrySet());
        ranking.sort((a, b) -> Integer.compare(b.getValue(), a.getValue()));
        return ranking.subList(0, 10);
    }

    static void audit() {
        while (open) {
            sleepQuietly(200);
        }
    }

    static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

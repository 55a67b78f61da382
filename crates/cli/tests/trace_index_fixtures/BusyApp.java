/**
 * Many short traced calls on two threads, so the recording spans many chunks:
 * main makes 250,000 calls of `mid` (each calling `leaf` twice), a started thread
 * 80,000 more.
 */
public class BusyApp {
    static int leaf(int i) {
        return i & 7;
    }

    static int mid(int i) {
        return leaf(i) + leaf(i + 1);
    }

    static long loop(int n) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += mid(i);
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        long sum = loop(250_000);
        Thread t = new Thread(() -> loop(80_000), "worker");
        t.start();
        t.join();
        System.out.println("sum " + sum);
    }
}

/**
 * Two traced runs compared by `jscope diff`: each of ROUNDS rounds calls
 * steady() (sleeps 10 ms) and work() (sleeps WORK_MS); with `extra`, main also
 * calls extra() a few times, which calls helper().
 *
 * Usage: DiffApp ROUNDS WORK_MS [extra]
 */
public class DiffApp {
    static void pause(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            try {
                Thread.sleep(left / 1_000_000L, (int) (left % 1_000_000L));
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    static void steady() {
        pause(10);
    }

    static void work(long ms) {
        pause(ms);
    }

    static void round(long ms) {
        steady();
        work(ms);
    }

    static void helper() {
        pause(1);
    }

    static void extra() {
        helper();
        helper();
    }

    public static void main(String[] args) {
        int rounds = Integer.parseInt(args[0]);
        long ms = Long.parseLong(args[1]);
        boolean extra = args.length > 2 && args[2].equals("extra");
        for (int i = 0; i < rounds; i++) {
            round(ms);
        }
        if (extra) {
            for (int i = 0; i < 3; i++) {
                extra();
            }
        }
        System.out.println("rounds " + rounds);
    }
}

/**
 * Drives the agent's stack walker directly (its test-only fault-injection
 * functions): WalkFuzz AGENT_PATH fuzz N SEED walks N times from garbage
 * registers; WalkFuzz AGENT_PATH time N DEPTH times N walks of this thread's
 * stack DEPTH Java frames deep.
 */
public class WalkFuzz {
    static native long garbageWalks(long n, long seed);

    static native long timeOwnWalk(long n);

    static volatile long sink;

    /** Spins until the recording (and its walker) has started. */
    static void awaitWalker() throws InterruptedException {
        for (int i = 0; i < 200 && garbageWalks(0, 1) < 0; i++) {
            Thread.sleep(20);
        }
    }

    static long down(int depth, long n) {
        if (depth <= 1) {
            return timeOwnWalk(n);
        }
        return down(depth - 1, n) + 0 * sink;
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        awaitWalker();
        long n = Long.parseLong(args[2]);
        switch (args[1]) {
            case "fuzz":
                System.out.println("walks " + garbageWalks(n, Long.parseLong(args[3])));
                break;
            case "time":
                int depth = Integer.parseInt(args[3]);
                for (int i = 0; i < 20_000; i++) {
                    down(depth, 1); // compiled before it is timed
                }
                System.out.println("ns " + down(depth, n));
                break;
            default:
                throw new IllegalArgumentException(args[1]);
        }
    }
}

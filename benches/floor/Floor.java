/** The probe floor: Hot's loop with two minimal JNI natives around the empty call, and with two empty ones. */
public class Floor {
    static native void enter(int id);

    static native void exit(int id);

    static native void enterEmpty(int id);

    static native void exitEmpty(int id);

    static void empty() {}

    static long loopEmpty(int n) {
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            enterEmpty(7);
            empty();
            exitEmpty(7);
        }
        return System.nanoTime() - start;
    }

    static long loop(int n) {
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            enter(7);
            empty();
            exit(7);
        }
        return System.nanoTime() - start;
    }

    public static void main(String[] args) {
        System.load(args[1]);
        int n = Integer.parseInt(args[0]);
        loop(n);
        long ns = loop(n);
        loopEmpty(n);
        long jni = loopEmpty(n);
        System.out.println("ns/call " + (double) ns / n + " jni-only " + (double) jni / n);
    }
}

package java.util;

/**
 * Probe for instrumented java.base classes (patched in with --patch-module). It calls
 * nothing, so instrumented JDK code cannot recurse into it, and counts under the class
 * monitor, which works from the first bytecode the VM runs.
 */
public final class JscopeProbe {
    private static long enters;
    private static long exits;
    private static long throwsOut;

    private JscopeProbe() {}

    public static synchronized void enter(int id) {
        enters++;
    }

    public static synchronized void exit(int id) {
        exits++;
    }

    public static synchronized void exitThrow(int id) {
        throwsOut++;
    }

    /** {enters, exits, exitThrows} so far. */
    public static synchronized long[] counts() {
        return new long[] {enters, exits, throwsOut};
    }
}

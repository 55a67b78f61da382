package jscope;

/** Compile-time stand-in for the class the jscope agent defines at run time; the
 *  test deletes its class file, so the agent's own class is the one loaded. */
public final class Events {
    public static int register(String name) { throw new UnsupportedOperationException("stub"); }
    public static void log(int id) { throw new UnsupportedOperationException("stub"); }
    public static void log(int id, long value) { throw new UnsupportedOperationException("stub"); }
    public static void begin(int id) { throw new UnsupportedOperationException("stub"); }
    public static void end(int id) { throw new UnsupportedOperationException("stub"); }
}

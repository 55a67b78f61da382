package jscope;

/**
 * Compile-time stand-in for the class of natives the agent defines at run time
 * in the bootstrap loader (`crates/agent/src/remote/calls.rs`): only its
 * signatures matter, the readers are compiled against them.
 */
public final class Remote {
    private Remote() {}

    public static native void enter(int site, Object[] slots);

    public static native void exit(int site);

    public static native void thrown(int site);

    public static native void served(Thread thread, int site, String method, String target,
            String traceparent, Object connection, int localPort, int remotePort);

    public static native String calling(Thread thread, int site, String method, String target,
            String traceparent);

    public static native boolean setOkHttpRequest(Object call, Object request);

    public static native void answered(Thread thread, int site, int status);

    public static native void sends(Thread thread, int site, Object socket);

    public static native void leave(Thread thread, int site);
}

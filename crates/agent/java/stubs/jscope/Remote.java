package jscope;

/**
 * Compile-time stand-in for the class of natives the agent defines at run time
 * in the bootstrap loader (`crates/agent/src/remote/calls.rs`): only its
 * signatures matter, the readers are compiled against them.
 */
public final class Remote {
    private Remote() {}

    /** The length of a traceparent `calling` writes. */
    public static final int TRACEPARENT = 55;

    public static native void enter(int site, Object[] slots);

    public static native void exit(int site);

    public static native void thrown(int site);

    public static native void served(Thread thread, int site, String request, Object connection,
            int localPort, int remotePort);

    public static native int calling(Thread thread, int site, String request, byte[] added);

    public static native boolean setOkHttpRequest(Object call, Object request);

    public static native void answered(Thread thread, int site, int status);

    public static native void sends(Thread thread, int site, Object socket);

    public static native void leave(Thread thread, int site);
}

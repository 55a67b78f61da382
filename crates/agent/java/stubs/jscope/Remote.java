package jscope;

/**
 * Compile-time stand-in for the class of natives the agent defines at run time
 * in the bootstrap loader (`crates/agent/src/remote/calls.rs`): only its
 * signatures matter, the helpers are compiled against them.
 */
public final class Remote {
    private Remote() {}

    public static native void enter(int site, Object[] slots);

    public static native void exit(int site);

    public static native void thrown(int site);

    public static native void served(int site, String method, String target, String traceparent,
            String localAddress, int localPort, String remoteAddress, int remotePort);

    public static native void calling(int site, String method, String target, String traceparent);

    public static native String traceparent();

    public static native boolean setOkHttpRequest(Object call, Object request);

    public static native void answered(int site, int status);

    public static native void sends(int site, Object socket);
}

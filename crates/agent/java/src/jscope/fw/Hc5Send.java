package jscope.fw;

import jscope.Remote;

/**
 * The connection an exchange goes over, at the entry of
 * DefaultBHttpClientConnection.sendRequestHeader (the connection in slot 0).
 */
public final class Hc5Send {
    private Hc5Send() {}

    public static void enter(int site, Object[] slots) {
        Remote.sends(Thread.currentThread(), site, slots[0]);
    }

    public static void exit(int site) {
        Remote.leave(Thread.currentThread(), site);
    }

    public static void thrown(int site) {
        Remote.thrown(site);
    }
}

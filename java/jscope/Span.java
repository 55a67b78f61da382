package jscope;

/**
 * Spans of work a thread does for a request, for jscope's agent: while a span is
 * open, every sample and event its thread records carries the span's request id,
 * so a profile can be narrowed to one request or to the slow ones.
 *
 * <pre>
 * long span = jscope.Span.start("checkout", "user=ann;cart=3");
 * try { ... } finally { jscope.Span.end(span); }
 * </pre>
 *
 * Spans nest on a thread (the inner one's parent is the outer one; both share a
 * trace id). Without the agent, or while it records nothing, start returns 0 and
 * end(0) does nothing: a few nanoseconds.
 */
public final class Span {
    private Span() {}

    /** Whether jscope's agent is in this JVM (its natives are bound). */
    private static final boolean AGENT = probe();

    private static boolean probe() {
        try {
            return present0();
        } catch (UnsatisfiedLinkError e) {
            return false;
        }
    }

    /** Opens a span named {@code name}; returns its id, 0 when nothing records. */
    public static long start(String name) {
        return AGENT ? start0(name, null) : 0L;
    }

    /** Opens a span with tags ({@code key=value} pairs joined by {@code ;}). */
    public static long start(String name, String tags) {
        return AGENT ? start0(name, tags) : 0L;
    }

    /** Ends span {@code span} (and any still open inside it); 0 is ignored. */
    public static void end(long span) {
        if (span != 0L) {
            end0(span);
        }
    }

    private static native boolean present0();

    private static native long start0(String name, String tags);

    private static native void end0(long span);
}

package jscope;

/**
 * The probes tests/arguments.rs inserts calls to: each prints what it was given,
 * one line per call, with each slot as `value:Type` (`null` for none, `this` for
 * the receiver, `array` for arrays).
 */
public class Remote {
    public static void enter(int site, Object[] slots) {
        StringBuilder sb = new StringBuilder("enter " + site);
        for (Object o : slots) {
            sb.append(' ');
            if (o == null) {
                sb.append("null");
            } else if (o.getClass().isArray()) {
                sb.append("array");
            } else if (o instanceof fixtures.Args) {
                sb.append("this");
            } else {
                sb.append(o).append(':').append(o.getClass().getSimpleName());
            }
        }
        System.out.println(sb);
    }

    public static void exit(int site) {
        System.out.println("exit " + site);
    }

    public static void thrown(int site) {
        System.out.println("thrown " + site);
    }
}

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Reads a JFR file with the JDK's own reader (jdk.jfr.consumer.RecordingFile) and
 * prints, for the event types named, how many events there are (`# TYPE N`) and
 * their stacks collapsed (`root;...;leaf N`, events without frames left out), each
 * frame labelled as jscope labels it: `pkg.Class.method` (a lambda's run-specific
 * address dropped), `symbol [library]` for native code (`symbol [vdso]` for the
 * vDSO), `symbol_[k]` for the kernel.
 * Usage: JfrStacks FILE TYPE [TYPE...]
 */
public class JfrStacks {
    public static void main(String[] args) throws Exception {
        List<String> types = List.of(args).subList(1, args.length);
        Map<String, Long> events = new TreeMap<>();
        Map<String, Long> stacks = new TreeMap<>();
        try (RecordingFile file = new RecordingFile(Path.of(args[0]))) {
            while (file.hasMoreEvents()) {
                RecordedEvent e = file.readEvent();
                String type = e.getEventType().getName();
                if (!types.contains(type)) {
                    continue;
                }
                events.merge(type, 1L, Long::sum);
                RecordedStackTrace trace = e.getStackTrace();
                if (trace == null || trace.getFrames().isEmpty()) {
                    continue;
                }
                List<RecordedFrame> frames = trace.getFrames();
                StringBuilder sb = new StringBuilder();
                for (int i = frames.size() - 1; i >= 0; i--) {
                    if (sb.length() > 0) {
                        sb.append(';');
                    }
                    sb.append(label(frames.get(i)));
                }
                stacks.merge(sb.toString(), 1L, Long::sum);
            }
        }
        for (String type : types) {
            System.out.println("# " + type + " " + events.getOrDefault(type, 0L));
        }
        for (Map.Entry<String, Long> s : stacks.entrySet()) {
            System.out.println(s.getKey() + " " + s.getValue());
        }
    }

    static String label(RecordedFrame f) {
        RecordedMethod m = f.getMethod();
        RecordedClass c = m.getType();
        String cls = c == null ? "" : c.getName();
        String name = m.getName();
        String kind = f.getType();
        if ("Kernel".equals(kind)) {
            return name + "_[k]";
        }
        boolean nativeCode = m.getDescriptor().equals("()L;")
                && ("Native".equals(kind) || "C++".equals(kind));
        if (nativeCode) {
            if (cls.isEmpty()) {
                return name;
            }
            if (cls.equals("[unknown]")) {
                return cls;
            }
            // A library named in brackets (the kernel's `[vdso]`) keeps its own.
            boolean bracketed = cls.startsWith("[") && cls.endsWith("]");
            return bracketed ? name + " " + cls : name + " [" + cls + "]";
        }
        return cls.isEmpty() ? name : withoutLambdaAddress(cls + "." + name);
    }

    /** `Main$$Lambda$14.0x0000000800c03000.run` -> `Main$$Lambda$14.run`, as jscope does. */
    static String withoutLambdaAddress(String label) {
        int at = label.indexOf("$$Lambda");
        if (at < 0) {
            return label;
        }
        int i = at + "$$Lambda".length();
        while (i < label.length() && (label.charAt(i) == '$' || Character.isDigit(label.charAt(i)))) {
            i++;
        }
        if (!(label.startsWith(".0x", i) || label.startsWith("/0x", i) || label.startsWith("+0x", i))) {
            return label;
        }
        int end = i + 3;
        while (end < label.length() && Character.digit(label.charAt(end), 16) >= 0) {
            end++;
        }
        if (label.charAt(i) == '+' && end < label.length() && (label.charAt(end) == '.' || label.charAt(end) == '/')) {
            int id = end + 1;
            while (id < label.length() && Character.isDigit(label.charAt(id))) {
                id++;
            }
            if (id > end + 1 && id < label.length() && label.charAt(id) == '.') {
                end = id;
            }
        }
        return label.substring(0, i) + label.substring(end);
    }
}

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * One hot loop per way a stack walk can fail in JIT-compiled code, each on a
 * thread named after it ("loop-NAME"), run for a given number of ms of the
 * thread's CPU time. Every loop's chain is Hot.run -> Hot.loopNAME ->
 * hot code, so a sample of that thread names its code when its stack holds
 * "Hot.loopNAME".
 *
 * Usage: Hot MILLIS NAME... (names below; "all" runs each in turn). With a
 * library path as JNI=PATH the jni loop calls back into Java from C.
 */
public class Hot {
    static volatile long sink;
    static volatile double dsink;

    interface Shape { long area(long x); }
    static final class Square implements Shape { public long area(long x) { return x * x; } }
    static final class Circle implements Shape { public long area(long x) { return 3 * x * x + 1; } }
    static final class Line implements Shape { public long area(long x) { return x + 7; } }
    static final class Dot implements Shape { public long area(long x) { return x ^ 5; } }

    static abstract class Animal { abstract long speak(long x); }
    static final class Cat extends Animal { long speak(long x) { return x + 1; } }
    static final class Dog extends Animal { long speak(long x) { return x * 3; } }
    static final class Cow extends Animal { long speak(long x) { return x ^ 0x55; } }
    static final class Owl extends Animal { long speak(long x) { return x - 9; } }

    static long cpuNanos() {
        return java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }

    /** StringBuilder.delete on a long builder: the time is in the arraycopy stub. */
    static void loopArraycopy(long end) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 200_000; i++) sb.append('x');
        while (cpuNanos() < end) {
            for (int i = 0; i < 200; i++) {
                sb.delete(0, 1);
                sb.append('y');
            }
        }
        sink += sb.length();
    }

    /** String coding intrinsics. */
    static void loopStrings(long end) {
        char[] cs = new char[4096];
        for (int i = 0; i < cs.length; i++) cs[i] = (char) ('a' + i % 26);
        String s = new String(cs);
        while (cpuNanos() < end) {
            for (int i = 0; i < 100; i++) {
                byte[] b = s.getBytes(StandardCharsets.UTF_8);
                String back = new String(b, StandardCharsets.ISO_8859_1);
                sink += back.length();
            }
        }
    }

    /** CRC32's intrinsic. */
    static void loopCrc(long end) {
        byte[] data = new byte[1 << 16];
        for (int i = 0; i < data.length; i++) data[i] = (byte) i;
        CRC32 crc = new CRC32();
        while (cpuNanos() < end) {
            for (int i = 0; i < 50; i++) {
                crc.update(data, 0, data.length);
            }
            sink += crc.getValue();
        }
    }

    /** Math intrinsics (sin, log, pow, exp). */
    static void loopMath(long end) {
        double x = 0.5;
        while (cpuNanos() < end) {
            for (int i = 0; i < 100_000; i++) {
                x = Math.sin(x) + Math.log(x + 2) + Math.pow(x, 1.5) * 1e-3 + Math.exp(-x);
            }
            dsink += x;
        }
    }

    /** % on doubles: compiled code calls libm's fmod directly. */
    static void loopFmod(long end) {
        double x = 1.0;
        while (cpuNanos() < end) {
            for (int i = 0; i < 100_000; i++) {
                x = (x * 31.0 + i) % 1_000_003.7;
            }
            dsink += x;
        }
    }

    /** A megamorphic interface call site: itable stubs. */
    static void loopItable(long end) {
        Shape[] shapes = {new Square(), new Circle(), new Line(), new Dot()};
        long acc = 0;
        while (cpuNanos() < end) {
            for (int i = 0; i < 1_000_000; i++) {
                acc += shapes[i & 3].area(i);
            }
        }
        sink += acc;
    }

    /** A megamorphic virtual call site: vtable stubs. */
    static void loopVtable(long end) {
        Animal[] animals = {new Cat(), new Dog(), new Cow(), new Owl()};
        long acc = 0;
        while (cpuNanos() < end) {
            for (int i = 0; i < 1_000_000; i++) {
                acc += animals[(i * 7) & 3].speak(i);
            }
        }
        sink += acc;
    }

    static void loopMillis(long end) {
        long acc = 0;
        while (cpuNanos() < end) {
            for (int i = 0; i < 10_000; i++) acc += System.currentTimeMillis();
        }
        sink += acc;
    }

    static void loopNanos(long end) {
        long acc = 0;
        while (cpuNanos() < end) {
            for (int i = 0; i < 10_000; i++) acc += System.nanoTime();
        }
        sink += acc;
    }

    static long down(int depth, long x) {
        if (depth == 0) {
            for (int i = 0; i < 2000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
            return x;
        }
        return down(depth - 1, x + depth) + 1;
    }

    /** Recursion 1,200 frames deep. */
    static void loopDeep(long end) {
        long acc = 0;
        while (cpuNanos() < end) acc += down(1200, acc);
        sink += acc;
    }

    static native long callBack(long n);

    /** Called from C: JNI calling back into Java. */
    static long fromNative(long x) {
        for (int i = 0; i < 5000; i++) x = x * 31 + i;
        return x;
    }

    static void loopJni(long end) {
        long acc = 0;
        while (cpuNanos() < end) acc += callBack(200);
        sink += acc;
    }

    static int initialised;

    /** Class initialisers, each busy: a fresh class loader loads them anew. */
    static void loopClinit(long end) throws Exception {
        java.net.URL here = Hot.class.getProtectionDomain().getCodeSource().getLocation();
        while (cpuNanos() < end) {
            ClassLoader loader = new java.net.URLClassLoader(new java.net.URL[] {here}, null);
            Class.forName("HotInit", true, loader);
            initialised++;
        }
    }

    static long thrower(long i) {
        if ((i & 1) == 0) throw new IllegalStateException("even " + i);
        return i;
    }

    /** Exceptions thrown and caught in a hot loop. */
    static void loopExceptions(long end) {
        long acc = 0;
        while (cpuNanos() < end) {
            for (int i = 0; i < 1000; i++) {
                try {
                    acc += thrower(i);
                } catch (IllegalStateException e) {
                    acc += e.getMessage().length();
                }
            }
        }
        sink += acc;
    }

    static final String[] ALL = {
        "arraycopy", "strings", "crc", "math", "fmod", "itable", "vtable", "millis",
        "nanos", "deep", "jni", "clinit", "exceptions",
    };

    static void loop(String name, long millis) throws Exception {
        long end = cpuNanos() + millis * 1_000_000L;
        switch (name) {
            case "arraycopy": loopArraycopy(end); break;
            case "strings": loopStrings(end); break;
            case "crc": loopCrc(end); break;
            case "math": loopMath(end); break;
            case "fmod": loopFmod(end); break;
            case "itable": loopItable(end); break;
            case "vtable": loopVtable(end); break;
            case "millis": loopMillis(end); break;
            case "nanos": loopNanos(end); break;
            case "deep": loopDeep(end); break;
            case "jni": loopJni(end); break;
            case "clinit": loopClinit(end); break;
            case "exceptions": loopExceptions(end); break;
            default: throw new IllegalArgumentException("no loop " + name);
        }
    }

    static void run(String name, long millis) {
        try {
            loop(name, millis);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = Long.parseLong(args[0]);
        cpuNanos(); // the management classes load here, not in the first loop
        String jni = System.getProperty("hot.jni");
        if (jni != null) System.load(jni);
        java.util.List<String> names = new java.util.ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("all")) names.addAll(java.util.Arrays.asList(ALL));
            else names.add(args[i]);
        }
        if (jni == null) names.remove("jni");
        for (String name : names) {
            Thread t = new Thread(() -> run(name, millis), "loop-" + name);
            t.start();
            t.join();
        }
        System.out.println("done " + sink + " " + dsink + " " + initialised);
    }
}

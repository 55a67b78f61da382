import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * javac as a build daemon runs it: the JDK's compiler, ROUNDS times in one JVM,
 * over the sources listed in a file (one path per line), into OUT_DIR.
 * Usage: JavacLoop ROUNDS SOURCES_FILE OUT_DIR
 */
public class JavacLoop {
    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        for (int i = 0; i < rounds; i++) {
            int status = javac.run(null, null, null, "-nowarn", "-proc:none", "-d", args[2], "@" + args[1]);
            if (status != 0) {
                throw new IllegalStateException("javac failed with " + status);
            }
        }
        System.out.println("compiled " + rounds + " times");
    }
}

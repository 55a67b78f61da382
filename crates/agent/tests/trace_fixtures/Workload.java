import java.io.ByteArrayOutputStream;
import java.io.StringReader;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.w3c.dom.Document;
import org.xml.sax.InputSource;

/**
 * A real program for tracing everything: collections, streams, regex, BigDecimal,
 * XML parsing and serialising, a thread pool, and (where the runtime has javac)
 * javac compiling a generated source tree in-process. Its output is
 * deterministic, so a traced run must print exactly what an untraced one does.
 * Usage: java Workload WORKDIR
 */
public class Workload {
    public static void main(String[] args) throws Exception {
        Path work = Path.of(args[0]);
        System.out.println("collections " + collections());
        System.out.println("regex " + regex());
        System.out.println("decimal " + decimal());
        System.out.println("xml " + xml());
        System.out.println("pool " + pool());
        System.out.println("uri " + URI.create("http://example.org/a/../b?q=1").normalize());
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac != null) {
            System.out.println("javac " + compileTree(javac, work));
        }
    }

    static String collections() {
        Map<String, List<Integer>> groups = new TreeMap<>();
        for (int i = 0; i < 2000; i++) {
            groups.computeIfAbsent("k" + (i % 17), k -> new ArrayList<>()).add(i * i % 1009);
        }
        return groups.entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue().stream().mapToInt(Integer::intValue).sum())
                .collect(Collectors.joining(","));
    }

    static int regex() {
        Pattern p = Pattern.compile("([a-z]+)(\\d+)");
        Matcher m = p.matcher(IntStream.range(0, 500).mapToObj(i -> "ab" + i).collect(Collectors.joining(" ")));
        int n = 0;
        while (m.find()) {
            n += m.group(2).length();
        }
        return n;
    }

    static BigDecimal decimal() {
        BigDecimal x = BigDecimal.ONE;
        for (int i = 1; i <= 60; i++) {
            x = x.add(BigDecimal.ONE.divide(BigDecimal.valueOf(i), 40, RoundingMode.HALF_EVEN));
        }
        return x.setScale(30, RoundingMode.HALF_EVEN);
    }

    static String xml() throws Exception {
        StringBuilder src = new StringBuilder("<shop>");
        for (int i = 0; i < 50; i++) {
            src.append("<item id=\"").append(i).append("\">name").append(i).append("</item>");
        }
        src.append("</shop>");
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new InputSource(new StringReader(src.toString())));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        TransformerFactory.newInstance().newTransformer().transform(new DOMSource(doc), new StreamResult(out));
        return doc.getElementsByTagName("item").getLength() + " " + digest(out.toByteArray());
    }

    static long pool() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(3);
        List<Future<Long>> parts = new ArrayList<>();
        for (int t = 0; t < 6; t++) {
            final int base = t;
            parts.add(pool.submit(() -> IntStream.range(0, 10_000).mapToLong(i -> (long) i * base % 7).sum()));
        }
        long sum = 0;
        for (Future<Long> f : parts) {
            sum += f.get();
        }
        pool.shutdown();
        return sum;
    }

    /** Writes 12 source files that use each other and compiles them with javac. */
    static String compileTree(JavaCompiler javac, Path work) throws Exception {
        Path src = Files.createDirectories(work.resolve("src/gen"));
        Path out = Files.createDirectories(work.resolve("out"));
        List<String> files = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            String next = i + 1 < 12 ? "new Gen" + (i + 1) + "().run(n - 1)" : "n";
            String code = "package gen;\nimport java.util.*;\n/** generated */\npublic class Gen" + i
                    + " implements Runnable {\n  record Pair(int a, String b) {}\n"
                    + "  public void run() { System.out.println(run(3)); }\n"
                    + "  int run(int n) { List<Pair> l = new ArrayList<>(); for (int i = 0; i < n; i++) l.add(new Pair(i, \"x\" + i));\n"
                    + "    return l.stream().mapToInt(Pair::a).sum() + (n > 0 ? " + next + " : 0); }\n"
                    + "  enum Kind { A, B; int weight() { return switch (this) { case A -> 1; case B -> 2; }; } }\n}\n";
            Path f = src.resolve("Gen" + i + ".java");
            Files.writeString(f, code);
            files.add(f.toString());
        }
        List<String> argv = new ArrayList<>(List.of("-d", out.toString(), "-g:none", "--release", "17"));
        argv.addAll(files);
        int rc = javac.run(null, null, null, argv.toArray(new String[0]));
        List<Path> classes;
        try (var walk = Files.walk(out)) {
            classes = walk.filter(p -> p.toString().endsWith(".class")).sorted().collect(Collectors.toList());
        }
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        for (Path c : classes) {
            md.update(out.relativize(c).toString().getBytes(StandardCharsets.UTF_8));
            md.update(Files.readAllBytes(c));
        }
        return "rc=" + rc + " classes=" + classes.size() + " " + hex(md.digest());
    }

    static String digest(byte[] bytes) throws Exception {
        return hex(MessageDigest.getInstance("SHA-256").digest(bytes)).substring(0, 16);
    }

    static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }
}

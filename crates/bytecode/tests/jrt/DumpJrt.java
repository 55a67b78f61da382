import java.io.IOException;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Copies class files of the running JDK out of its jrt: image:
 * {@code DumpJrt <out dir> <max per package dir> <module/package dir>...}.
 * Every class of each directory (not its subdirectories), up to the limit, in name order.
 */
public class DumpJrt {
    public static void main(String[] args) throws IOException {
        Path out = Path.of(args[0]);
        int limit = Integer.parseInt(args[1]);
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        int total = 0;
        for (int i = 2; i < args.length; i++) {
            Path dir = jrt.getPath("/modules", args[i]);
            if (!Files.isDirectory(dir)) {
                continue; // a runtime image may leave modules out
            }
            List<Path> classes;
            try (Stream<Path> s = Files.list(dir)) {
                classes = s.filter(p -> p.toString().endsWith(".class"))
                        .sorted()
                        .limit(limit)
                        .collect(Collectors.toList());
            }
            for (Path c : classes) {
                String rel = dir.relativize(c).toString();
                String pkg = args[i].substring(args[i].indexOf('/') + 1);
                Path target = out.resolve(pkg).resolve(rel);
                Files.createDirectories(target.getParent());
                Files.write(target, Files.readAllBytes(c));
                total++;
            }
        }
        System.out.println("dumped " + total);
    }
}

import java.net.URL;
import java.net.URLClassLoader;

/** Loads Transient in K fresh class loaders, drops them and collects, so the
 *  JVM unloads each copy. */
public class Unloader {
    public static void main(String[] args) throws Exception {
        int k = Integer.parseInt(args[0]);
        URL classes = Unloader.class.getProtectionDomain().getCodeSource().getLocation();
        long sum = 0;
        for (int i = 0; i < k; i++) {
            try (URLClassLoader loader = new URLClassLoader(new URL[] {classes}, ClassLoader.getPlatformClassLoader())) {
                Class<?> c = loader.loadClass("Transient");
                sum += (Long) c.getMethod("work", long.class).invoke(null, 1000L);
            }
        }
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        System.out.println("sum " + sum);
    }
}

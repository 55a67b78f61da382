import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.regex.Pattern;
import java.util.zip.Deflater;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.Inflater;

/** JDK work that allocates native memory (zlib streams, direct buffers) and contends. */
public class Soak {
    static final Object shared = new Object();
    static long counter;

    static void run(int millis) {
        Random random = new Random(millis);
        byte[] data = new byte[64 * 1024];
        Pattern words = Pattern.compile("[a-z]+");
        long until = System.nanoTime() + millis * 1_000_000L;
        try {
            while (System.nanoTime() < until) {
                random.nextBytes(data);
                for (int i = 0; i < data.length; i += 3) {
                    data[i] = (byte) ('a' + (i % 26));
                }
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
                    gz.write(data);
                }
                try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(out.toByteArray()))) {
                    in.readAllBytes();
                }
                Deflater deflater = new Deflater();
                deflater.setInput(data);
                deflater.finish();
                byte[] packed = new byte[data.length * 2];
                int n = deflater.deflate(packed);
                deflater.end();
                Inflater inflater = new Inflater();
                inflater.setInput(packed, 0, n);
                inflater.inflate(new byte[data.length]);
                inflater.end();
                ByteBuffer direct = ByteBuffer.allocateDirect(256 * 1024);
                direct.put(data, 0, 1024);
                words.matcher(new String(data, 0, 4096, java.nio.charset.StandardCharsets.ISO_8859_1)).results().count();
                synchronized (shared) {
                    counter++;
                }
            }
        } catch (IOException | java.util.zip.DataFormatException e) {
            throw new RuntimeException(e);
        }
    }
}

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * touch() writes one byte to each of PAGES fresh pages of a new direct buffer
 * (kept alive, so its memory is never reused); spin() touches no new memory.
 */
public class PageTouch {
    static final int PAGES = 64;
    static final List<ByteBuffer> kept = new ArrayList<>();

    static int touch() {
        ByteBuffer b = ByteBuffer.allocateDirect(PAGES * 4096);
        for (int i = 0; i < PAGES; i++) {
            b.put(i * 4096, (byte) 1);
        }
        kept.add(b);
        return b.get(4096);
    }

    static long spin(long x) {
        long s = x;
        for (int i = 0; i < 1000; i++) {
            s = s * 31 + i;
        }
        return s;
    }

    public static void main(String[] args) {
        int rounds = Integer.parseInt(args[0]);
        long sum = 0;
        for (int r = 0; r < rounds; r++) {
            sum += touch();
            sum += spin(r);
        }
        System.out.println("rounds " + rounds + " " + (sum != 0));
    }
}

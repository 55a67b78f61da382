import java.util.ArrayList;
import java.util.List;

/** An allocation-heavy program: most bytes are 64 KiB byte[] buffers made in
 *  makeBuffers (short-lived), a little is small objects made elsewhere. Ends
 *  with collections so short-lived sampled objects are freed. */
public class Allocator {
    static long sink;

    static byte[] makeBuffers() {
        byte[] b = new byte[64 * 1024];
        b[b.length - 1] = 1;
        return b;
    }

    static List<Integer> smallThings(int n) {
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < n; i++) list.add(i * 1000);
        return list;
    }

    public static void main(String[] args) {
        int rounds = Integer.parseInt(args[0]);
        for (int r = 0; r < rounds; r++) {
            sink += makeBuffers().length;
            if (r % 16 == 0) sink += smallThings(64).size();
        }
        for (int i = 0; i < 3; i++) System.gc();
        System.out.println("sink " + sink);
    }
}

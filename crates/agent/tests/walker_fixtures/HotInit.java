/** A class whose initialiser is busy; Hot's clinit loop loads it in fresh loaders. */
public class HotInit {
    static long value;

    static {
        long x = 1;
        for (int i = 0; i < 3_000_000; i++) x = x * 6364136223846793005L + i;
        value = x;
    }
}

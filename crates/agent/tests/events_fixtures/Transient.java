/** Loaded only by Unloader's throw-away class loaders. */
public class Transient {
    public static long work(long n) {
        long x = 0;
        for (long i = 0; i < n; i++) x += i * 31;
        return x;
    }
}

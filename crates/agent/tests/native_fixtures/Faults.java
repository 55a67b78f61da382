/** Touches every page of a new array of args[0] MiB, so page faults happen at its allocation. */
public class Faults {
    static byte[] allocate(int mib) {
        byte[] a = new byte[mib << 20];
        for (int i = 0; i < a.length; i += 4096) {
            a[i] = 1;
        }
        return a;
    }

    public static void main(String[] args) {
        byte[] a = allocate(Integer.parseInt(args[0]));
        System.out.println("touched " + a.length);
    }
}

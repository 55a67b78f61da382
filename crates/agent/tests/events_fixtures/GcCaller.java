/** Calls System.gc() a known number of times. */
public class GcCaller {
    public static void main(String[] args) {
        int k = Integer.parseInt(args[0]);
        for (int i = 0; i < k; i++) {
            byte[] garbage = new byte[1 << 20];
            garbage[0] = (byte) i;
            System.gc();
        }
        System.out.println("collected " + k);
    }
}

/** Calls a() and b() until killed, for tracing started and changed by attach. */
public class Loop {
    static int a(int x) {
        return x + 1;
    }

    static int b(int x) {
        return x * 2;
    }

    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        int v = 0;
        while (true) {
            v = a(v) & 0xffff;
            v = b(v) & 0xffff;
            Thread.sleep(1);
        }
    }
}

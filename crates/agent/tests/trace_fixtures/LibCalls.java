import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * exclude-library: the app calls java.util directly (recorded), java.util calls
 * itself (counted as untraced) and calls back into the app (recorded, carrying
 * the count of the library calls before it).
 */
public class LibCalls {
    static int byValue(Integer a, Integer b) {
        return Integer.compare(a, b);
    }

    public static void main(String[] args) {
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            list.add((i * 7) % 20);
        }
        Collections.sort(list, LibCalls::byValue);
        System.out.println("first " + list.get(0) + " last " + list.get(19));
    }
}

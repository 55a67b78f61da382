import java.time.Duration;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/** Uses instrumented JDK packages and prints what it computed, then the probe counts. */
public class UseJdk {
    public static void main(String[] args) throws Exception {
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < 1000; i++) list.add((i * 7919) % 1009);
        Collections.sort(list);
        Map<Integer, Long> byMod = list.stream()
                .collect(Collectors.groupingBy(i -> i % 7, TreeMap::new, Collectors.counting()));
        System.out.println("RESULT sorted " + list.subList(0, 5) + " " + byMod);
        Map<String, Integer> words = new HashMap<>();
        Matcher m = Pattern.compile("(\\w+)@(\\w+)").matcher("a@b c@d a@e x@y a@b");
        while (m.find()) words.merge(m.group(1), m.group(2).length(), Integer::sum);
        System.out.println("RESULT regex " + new TreeMap<>(words));
        LocalDate d = LocalDate.of(2024, 2, 28).plusDays(2);
        System.out.println("RESULT time " + d.format(DateTimeFormatter.ISO_DATE) + " "
                + Duration.ofMinutes(135).toString() + " " + d.getDayOfWeek());
        System.out.println("RESULT stream " + IntStream.rangeClosed(1, 20).filter(i -> i % 3 == 0)
                .mapToObj(Integer::toString).collect(Collectors.joining(",")));
        try {
            List.of(1, 2).add(3);
        } catch (UnsupportedOperationException e) {
            System.out.println("RESULT immutable " + e.getClass().getSimpleName());
        }
        System.out.println("RESULT optional " + Optional.ofNullable(null).map(Object::toString).orElse("empty"));
        try {
            Object counts = Class.forName("java.util.JscopeProbe").getMethod("counts").invoke(null);
            System.out.println("PROBE " + java.util.Arrays.toString((long[]) counts));
        } catch (ClassNotFoundException e) {
            System.out.println("PROBE none");
        }
    }
}

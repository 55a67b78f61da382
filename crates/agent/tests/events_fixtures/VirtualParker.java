import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.locks.LockSupport;

/** N (default 20) virtual threads and one platform thread each park 40 ms
 *  (JDK 21+; virtual threads through reflection, so that this compiles with
 *  --release 17). */
public class VirtualParker {
    static void virtualPark() {
        LockSupport.parkNanos(40_000_000L);
    }

    static void platformPark() {
        LockSupport.parkNanos(40_000_000L);
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        ExecutorService virtual =
                (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        List<Future<?>> parked = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            parked.add(virtual.submit(VirtualParker::virtualPark));
        }
        Thread platform = new Thread(VirtualParker::platformPark, "platform");
        platform.start();
        for (Future<?> f : parked) f.get();
        platform.join();
        virtual.shutdown();
        System.out.println("parked " + n);
    }
}

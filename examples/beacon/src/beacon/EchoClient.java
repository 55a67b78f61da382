package beacon;

import java.rmi.NotBoundException;
import java.rmi.registry.LocateRegistry;

/**
 * `EchoClient PORT THREADS CALLS [shutdown]`: THREADS threads named caller-T each
 * make CALLS calls with request ids T * 100 + K, K = 0, 1, ...
 */
public final class EchoClient {
    public static void main(String[] args) throws Exception {
        Echo echo = lookup(Integer.parseInt(args[0]));
        int threads = Integer.parseInt(args[1]);
        int calls = Integer.parseInt(args[2]);
        Thread[] all = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            int base = t * 100;
            all[t] = new Thread(() -> {
                for (int k = 0; k < calls; k++) {
                    call(echo, base + k);
                }
            }, "caller-" + t);
            all[t].start();
        }
        for (Thread t : all) {
            t.join();
        }
        System.out.println("done");
        if (args.length > 3) {
            echo.shutdown();
        }
    }

    static Echo lookup(int port) throws Exception {
        try {
            return (Echo) LocateRegistry.getRegistry("127.0.0.1", port).lookup(Chain.NAME);
        } catch (NotBoundException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One request; traced, so the merged tree shows which request it was. */
    static void call(Echo echo, int requestId) {
        try {
            if (echo.echo(requestId) != requestId) {
                throw new IllegalStateException("wrong answer for " + requestId);
            }
        } catch (java.rmi.RemoteException e) {
            throw new IllegalStateException(e);
        }
    }
}

package beacon;

import java.rmi.NotBoundException;
import java.rmi.RemoteException;
import java.rmi.registry.LocateRegistry;
import java.rmi.registry.Registry;
import java.rmi.server.UnicastRemoteObject;

/** What every Beacon server shares: its registry, the next server, work, shutdown. */
final class Chain {
    static final String NAME = "beacon";

    private Chain() {}

    /** Exports a server on its own registry port and prints "ready" once callable. */
    static Registry serve(java.rmi.Remote server, int port) throws RemoteException {
        Registry registry = LocateRegistry.createRegistry(port);
        registry.rebind(NAME, UnicastRemoteObject.exportObject(server, 0));
        System.out.println("ready on " + port);
        return registry;
    }

    static Beacon lookup(int port) throws RemoteException {
        try {
            return (Beacon) LocateRegistry.getRegistry("127.0.0.1", port).lookup(NAME);
        } catch (NotBoundException e) {
            throw new RemoteException("no beacon on port " + port, e);
        }
    }

    /** Some CPU work so each server's share shows up in the tree. */
    static long work(int rounds) {
        long acc = 0;
        for (int i = 1; i <= rounds; i++) {
            acc += Long.numberOfTrailingZeros(i * 2654435761L) + i % 7;
        }
        return acc;
    }

    /** Exits after the reply to the shutdown call has been sent. */
    static void exitSoon(java.rmi.Remote server) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(300);
                UnicastRemoteObject.unexportObject(server, true);
            } catch (Exception e) {
                // exiting anyway
            }
            System.exit(0);
        }, "beacon-exit");
        t.start();
    }
}

package beacon;

import java.rmi.Remote;
import java.rmi.RemoteException;

/** JaViz's Beacon: one call forwarded along a chain of servers, each in its own JVM. */
public interface Beacon extends Remote {
    /**
     * Does this server's share of the work, forwards the request to the next server
     * if there is one, and returns the number of servers the request went through.
     * The request id travels as an argument so each server execution can be told apart.
     */
    int remoteFoo(int hop, int requestId) throws RemoteException;

    /** Stops the servers after this one, then this one. */
    void shutdown() throws RemoteException;
}

package beacon;

import java.rmi.Remote;
import java.rmi.RemoteException;

/** Many clients, one server object: each call's request id decides its work. */
public interface Echo extends Remote {
    /** Calls {@code digit()} (requestId % 5) + 1 times and returns requestId. */
    int echo(int requestId) throws RemoteException;

    void shutdown() throws RemoteException;
}

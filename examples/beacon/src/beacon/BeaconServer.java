package beacon;

import java.rmi.RemoteException;

/** A Beacon server that forwards each call to the next one: `BeaconServer PORT NEXT_PORT`. */
public final class BeaconServer implements Beacon {
    private final int nextPort;
    private Beacon next;
    private volatile long sink;

    BeaconServer(int nextPort) {
        this.nextPort = nextPort;
    }

    public static void main(String[] args) throws Exception {
        Chain.serve(new BeaconServer(Integer.parseInt(args[1])), Integer.parseInt(args[0]));
    }

    private synchronized Beacon next() throws RemoteException {
        if (next == null) {
            next = Chain.lookup(nextPort);
        }
        return next;
    }

    @Override
    public int remoteFoo(int hop, int requestId) throws RemoteException {
        sink += Chain.work(20_000);
        return next().remoteFoo(hop + 1, requestId);
    }

    @Override
    public void shutdown() throws RemoteException {
        next().shutdown();
        Chain.exitSoon(this);
    }
}

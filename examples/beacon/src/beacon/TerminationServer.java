package beacon;

/** The end of the Beacon chain: does its work and answers. `TerminationServer PORT`. */
public final class TerminationServer implements Beacon {
    private volatile long sink;

    public static void main(String[] args) throws Exception {
        Chain.serve(new TerminationServer(), Integer.parseInt(args[0]));
    }

    @Override
    public int remoteFoo(int hop, int requestId) {
        sink += Chain.work(50_000);
        return hop;
    }

    @Override
    public void shutdown() {
        Chain.exitSoon(this);
    }
}

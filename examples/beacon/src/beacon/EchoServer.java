package beacon;

/** One Echo object for every client: `EchoServer PORT`. */
public final class EchoServer implements Echo {
    private volatile long sink;

    public static void main(String[] args) throws Exception {
        Chain.serve(new EchoServer(), Integer.parseInt(args[0]));
    }

    @Override
    public int echo(int requestId) {
        for (int i = 0; i <= requestId % 5; i++) {
            digit();
        }
        return requestId;
    }

    /** The unit of work a request id asks for; counted in the merged tree. */
    private void digit() {
        sink += Chain.work(2_000);
    }

    @Override
    public void shutdown() {
        Chain.exitSoon(this);
    }
}

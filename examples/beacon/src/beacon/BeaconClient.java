package beacon;

/** Calls remoteFoo on the first server: `BeaconClient PORT [CALLS]`. */
public final class BeaconClient {
    public static void main(String[] args) throws Exception {
        Beacon first = Chain.lookup(Integer.parseInt(args[0]));
        int calls = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        for (int id = 1; id <= calls; id++) {
            int hops = first.remoteFoo(1, id);
            System.out.println("request " + id + ": " + hops + " servers");
        }
        first.shutdown();
    }
}

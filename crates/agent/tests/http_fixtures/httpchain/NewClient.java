package httpchain;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** `NewClient PORT SEND_IDS ASYNC_IDS [TRACEPARENT]` with java.net.http.HttpClient:
 * the requests of SEND_IDS (comma-separated, `-` for none) one after the other
 * with `send`, then those of ASYNC_IDS all at once with `sendAsync` from main,
 * each answer printed in order; with TRACEPARENT, the requests carry that header
 * themselves. The server answers id `fail` with 503. */
public class NewClient {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String own = args.length > 3 ? args[3] : null;
        HttpClient client = HttpClient.newHttpClient();
        for (String id : ids(args[1])) {
            HttpResponse<String> r = client.send(request(port, id, own), HttpResponse.BodyHandlers.ofString());
            System.out.println("send " + id + ": " + answer(r));
        }
        List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
        List<String> asyncIds = ids(args[2]);
        for (String id : asyncIds) {
            all.add(client.sendAsync(request(port, id, own), HttpResponse.BodyHandlers.ofString()));
        }
        for (int i = 0; i < all.size(); i++) {
            System.out.println("async " + asyncIds.get(i) + ": " + answer(all.get(i).join()));
        }
    }

    /** One request to /hop?QUERY with `send`, for a forwarding server. */
    static String get(HttpClient client, int port, String query) throws IOException {
        URI uri = URI.create("http://127.0.0.1:" + port + "/hop?" + query);
        try {
            return client.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString()).body();
        } catch (InterruptedException e) {
            throw new IOException(e);
        }
    }

    static List<String> ids(String arg) {
        return arg.equals("-") ? List.of() : List.of(arg.split(","));
    }

    static HttpRequest request(int port, String id, String own) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/hop?id=" + id));
        if (own != null) {
            b.header("traceparent", own);
        }
        return b.build();
    }

    static String answer(HttpResponse<String> r) {
        return r.statusCode() == 200 ? r.body() : "status " + r.statusCode();
    }
}

package httpchain;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;

/** An HTTP hop: `Server NAME PORT REQUESTS [NEXT_PORT [httpclient]]` serves /hop,
 * forwarding each request to NEXT_PORT when given (with HttpURLConnection, or
 * java.net.http.HttpClient when `httpclient` follows), and exits after REQUESTS
 * requests. */
public class Server {
    static String name;
    static int next;
    /** Forwards with this when set, else with HttpURLConnection. */
    static HttpClient forward;
    static CountDownLatch left;

    public static void main(String[] args) throws Exception {
        name = args[0];
        int port = Integer.parseInt(args[1]);
        left = new CountDownLatch(Integer.parseInt(args[2]));
        next = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        if (args.length > 4 && args[4].equals("httpclient")) {
            forward = HttpClient.newHttpClient();
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.createContext("/hop", new Hop());
        server.start();
        System.out.println("ready");
        left.await();
        server.stop(0);
    }

    static class Hop implements HttpHandler {
        public void handle(HttpExchange ex) throws IOException {
            String id = ex.getRequestURI().getQuery();
            // What arrived on the wire, for the tests to compare with the records.
            System.out.println("served " + id + " traceparent=" + ex.getRequestHeaders().getFirst("traceparent"));
            if (id.equals("id=throw")) {
                // The handler leaves by an exception: the server closes the
                // connection without an answer (not counted: the client may
                // send the request again).
                throw new IllegalStateException("thrown for the test");
            }
            if (id.equals("id=fail")) {
                // A server error, for the records' failed flag.
                ex.sendResponseHeaders(503, -1);
                ex.close();
                left.countDown();
                return;
            }
            String answer = name + "(" + work(id) + ")";
            if (next != 0) {
                answer = answer + " " + (forward != null ? NewClient.get(forward, next, id) : Client.get(next, id));
            }
            byte[] body = answer.getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
            left.countDown();
        }
    }

    static int work(String id) {
        int sum = 0;
        for (int i = 0; i < 200_000; i++) {
            sum += (i ^ id.hashCode()) & 7;
        }
        return sum % 10;
    }
}

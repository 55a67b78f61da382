package httpchain;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;

/** `Client PORT N [TRACEPARENT]`: N requests to /hop, one after the other, each
 * answer printed; with TRACEPARENT, the requests carry that header themselves. */
public class Client {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int n = Integer.parseInt(args[1]);
        own = args.length > 2 ? args[2] : null;
        for (int i = 1; i <= n; i++) {
            System.out.println("request " + i + ": " + get(port, "id=" + i));
        }
    }

    static String own;

    static String get(int port, String query) throws IOException {
        URL url = new URL("http://127.0.0.1:" + port + "/hop?" + query);
        HttpURLConnection c = (HttpURLConnection) url.openConnection();
        if (own != null) {
            c.setRequestProperty("traceparent", own);
        }
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}

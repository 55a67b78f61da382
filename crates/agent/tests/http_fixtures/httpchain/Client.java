package httpchain;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;

/** `Client PORT N [TRACEPARENT]`: N requests to /hop, one after the other, each
 * answer printed; with TRACEPARENT, the requests carry that header themselves.
 * N may instead list the request ids (`fail,2`: the server answers `fail` with 503,
 * and its handler throws on `throw`). */
public class Client {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        own = args.length > 2 ? args[2] : null;
        for (String id : ids(args[1])) {
            String answer;
            try {
                answer = get(port, "id=" + id);
            } catch (IOException e) {
                answer = "error " + e.getMessage().split(" for URL")[0];
            }
            System.out.println("request " + id + ": " + answer);
        }
    }

    static String own;

    static String[] ids(String arg) {
        if (arg.contains(",")) {
            return arg.split(",");
        }
        String[] ids = new String[Integer.parseInt(arg)];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = String.valueOf(i + 1);
        }
        return ids;
    }

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

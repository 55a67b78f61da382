import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * Thread "pipe-reader" blocks in a socket read while another thread sends it one
 * byte every 5 ms, args[0] times.
 */
public class BlockingIo {
    static long readAll(InputStream in) throws Exception {
        long n = 0;
        while (in.read() >= 0) {
            n++;
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        try (ServerSocket server = new ServerSocket(0)) {
            Socket client = new Socket("127.0.0.1", server.getLocalPort());
            Socket accepted = server.accept();
            long[] got = new long[1];
            Thread reader = new Thread(() -> {
                try (InputStream in = accepted.getInputStream()) {
                    got[0] = readAll(in);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "pipe-reader");
            reader.start();
            try (OutputStream out = client.getOutputStream()) {
                for (int i = 0; i < rounds; i++) {
                    out.write(i);
                    out.flush();
                    Thread.sleep(5);
                }
            }
            client.close();
            reader.join();
            System.out.println("read " + got[0]);
        }
    }
}

package fw;

import java.io.IOException;
import javax.servlet.ServletException;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

/**
 * The Jetty front: `Front PORT BACKEND_PORT`. Every request calls the backend
 * over Apache HttpClient 5; `?heavy=1` first spends 150 ms of CPU hashing (and
 * asks the backend for its heavy answer), the others 8 ms. The body is the
 * trace id the request arrived with.
 */
public final class Front extends HttpServlet {
    private final CloseableHttpClient client = HttpClients.createDefault();
    private final String backend;

    Front(int backendPort) {
        this.backend = "http://127.0.0.1:" + backendPort;
    }

    public static void main(String[] args) throws Exception {
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(Integer.parseInt(args[0]));
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.addServlet(new ServletHolder(new Front(Integer.parseInt(args[1]))), "/*");
        server.setHandler(context);
        server.start();
        System.out.println("ready");
        System.out.flush();
        server.join();
    }

    /** The logged window holds the whole of service, the agent's request. */
    @Override
    public void service(ServletRequest req, ServletResponse res) throws ServletException, IOException {
        long t0 = System.nanoTime();
        String trace = Work.traceOf(((HttpServletRequest) req).getHeader("traceparent"));
        boolean quit = ((HttpServletRequest) req).getRequestURI().startsWith("/quit");
        Work.markPhase(((HttpServletRequest) req).getRequestURI());
        super.service(req, res);
        Work.served(trace, t0, System.nanoTime());
        if (quit) {
            Work.exitSoon();
        }
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        boolean slow = "1".equals(req.getParameter("heavy"));
        String body = answer(client, backend, req.getRequestURI(), slow, req.getHeader("traceparent"));
        res.setContentType("text/plain");
        res.getWriter().print(body);
    }

    /**
     * A request's work (heavy or light), its call to the backend, and the body
     * of its answer: the trace id it arrived with. Warm-up requests reach the
     * backend as `/warm`.
     */
    static String answer(CloseableHttpClient client, String backend, String uri, boolean slow,
            String traceparent) throws IOException {
        String trace = Work.traceOf(traceparent);
        boolean quit = uri.startsWith("/quit");
        boolean warm = uri.startsWith("/warm");
        int v = quit ? 0 : slow ? heavy() : light();
        String path = quit ? "/quit" : slow ? "/b?heavy=1" : warm ? "/warm" : "/b";
        String answer = client.execute(new HttpGet(backend + path),
                r -> EntityUtils.toString(r.getEntity()));
        return trace + " " + v + answer.length();
    }

    static int heavy() {
        return Work.burn(150);
    }

    static int light() {
        return Work.burn(8);
    }
}

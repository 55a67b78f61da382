package fw;

import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.entity.EntityUtils;

/**
 * The Tomcat 10 front (a jakarta.servlet servlet), as Front is on Jetty:
 * `TomcatFront PORT BACKEND_PORT BASE_DIR`. Every request calls the backend
 * over Apache HttpClient 5; `?heavy=1` first spends 150 ms of CPU, the others
 * 8 ms. The body is the trace id the request arrived with.
 */
public final class TomcatFront extends HttpServlet {
    private final CloseableHttpClient client = HttpClients.createDefault();
    private final String backend;

    TomcatFront(int backendPort) {
        this.backend = "http://127.0.0.1:" + backendPort;
    }

    public static void main(String[] args) throws Exception {
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(args[2]);
        Connector connector = new Connector();
        connector.setPort(Integer.parseInt(args[0]));
        connector.setProperty("address", "127.0.0.1");
        tomcat.getService().addConnector(connector);
        tomcat.setConnector(connector);
        Context context = tomcat.addContext("", null);
        Tomcat.addServlet(context, "front", new TomcatFront(Integer.parseInt(args[1])));
        context.addServletMappingDecoded("/*", "front");
        tomcat.start();
        System.out.println("ready");
        System.out.flush();
        tomcat.getServer().await();
    }

    /** The logged window holds the whole of service, the agent's request. */
    @Override
    public void service(ServletRequest req, ServletResponse res) throws ServletException, IOException {
        long t0 = System.nanoTime();
        String trace = Work.traceOf(((HttpServletRequest) req).getHeader("traceparent"));
        boolean quit = ((HttpServletRequest) req).getRequestURI().startsWith("/quit");
        super.service(req, res);
        Work.served(trace, t0, System.nanoTime());
        if (quit) {
            Work.exitSoon();
        }
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String trace = Work.traceOf(req.getHeader("traceparent"));
        boolean quit = req.getRequestURI().startsWith("/quit");
        boolean slow = "1".equals(req.getParameter("heavy"));
        int v = quit ? 0 : slow ? Front.heavy() : Front.light();
        String path = quit ? "/quit" : slow ? "/b?heavy=1" : "/b";
        String answer = client.execute(new HttpGet(backend + path),
                r -> EntityUtils.toString(r.getEntity()));
        res.setContentType("text/plain");
        res.getWriter().print(trace + " " + v + answer.length());
    }
}

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
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;

/**
 * The Tomcat 10 front (a jakarta.servlet servlet), as Front is on Jetty:
 * `TomcatFront PORT BACKEND_PORT BASE_DIR`. Every request calls the backend
 * over Apache HttpClient 5, doing what Front does (`Front.answer`).
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
        boolean slow = "1".equals(req.getParameter("heavy"));
        String body = Front.answer(client, backend, req.getRequestURI(), slow, req.getHeader("traceparent"));
        res.setContentType("text/plain");
        res.getWriter().print(body);
    }
}

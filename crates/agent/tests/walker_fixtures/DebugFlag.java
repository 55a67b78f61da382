import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;

/** Prints the value of DebugNonSafepoints as the JVM reports it. */
public class DebugFlag {
    public static void main(String[] args) {
        HotSpotDiagnosticMXBean bean = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        System.out.println(bean.getVMOption("DebugNonSafepoints").getValue());
    }
}

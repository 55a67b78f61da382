import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;

/**
 * An in-memory database under load (H2, Debian's libh2-java): ROWS orders over
 * a thousand customers inserted, then ROUNDS rounds of grouping, joining and
 * point queries. Usage: H2Load ROWS ROUNDS
 */
public class H2Load {
    public static void main(String[] args) throws Exception {
        int rows = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        long checksum = 0;
        try (Connection c = DriverManager.getConnection("jdbc:h2:mem:load;DB_CLOSE_DELAY=-1")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE customer(id INT PRIMARY KEY, name VARCHAR(40), region INT)");
                s.execute("CREATE TABLE orders(id INT PRIMARY KEY, customer INT, amount DECIMAL(12,2), note VARCHAR(80))");
                s.execute("CREATE INDEX orders_customer ON orders(customer)");
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO customer VALUES (?, ?, ?)")) {
                for (int i = 0; i < 1000; i++) {
                    p.setInt(1, i);
                    p.setString(2, "customer-" + i);
                    p.setInt(3, i % 17);
                    p.addBatch();
                }
                p.executeBatch();
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO orders VALUES (?, ?, ?, ?)")) {
                for (int i = 0; i < rows; i++) {
                    p.setInt(1, i);
                    p.setInt(2, (i * 7919) % 1000);
                    p.setBigDecimal(3, java.math.BigDecimal.valueOf((i * 31L) % 100000, 2));
                    p.setString(4, "note " + Integer.toHexString(i * 2654435761L > 0 ? i : -i));
                    p.addBatch();
                    if (i % 1000 == 999) p.executeBatch();
                }
                p.executeBatch();
            }
            try (Statement s = c.createStatement();
                 PreparedStatement point = c.prepareStatement("SELECT SUM(amount) FROM orders WHERE customer = ?")) {
                for (int r = 0; r < rounds; r++) {
                    try (ResultSet rs = s.executeQuery(
                            "SELECT c.region, COUNT(*), SUM(o.amount) FROM orders o JOIN customer c ON o.customer = c.id"
                                    + " GROUP BY c.region ORDER BY 3 DESC")) {
                        while (rs.next()) checksum += rs.getLong(2);
                    }
                    try (ResultSet rs = s.executeQuery(
                            "SELECT note FROM orders WHERE note LIKE '%" + Integer.toHexString(r) + "%' ORDER BY amount LIMIT 50")) {
                        while (rs.next()) checksum += rs.getString(1).length();
                    }
                    for (int k = 0; k < 200; k++) {
                        point.setInt(1, (k * 13 + r) % 1000);
                        try (ResultSet rs = point.executeQuery()) {
                            if (rs.next() && rs.getBigDecimal(1) != null) checksum += rs.getBigDecimal(1).longValue();
                        }
                    }
                }
            }
        }
        System.out.println("checksum " + checksum);
    }
}

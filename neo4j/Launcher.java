/*
 * Runs a real Neo4j 5.26 Community server in this JVM, for development, tests and CI on machines
 * without Docker. No compile step: it is a single-file source program (JEP 330).
 *
 *   java -Xmx1g -XX:+UseG1GC ... -cp 'neo4j/lib/*' neo4j/Launcher.java HOME [--host 127.0.0.1]
 *        [--port 7687] [--pagecache 128m]
 *
 *   HOME        server home folder (databases under HOME/data, Neo4j's logs under HOME/logs);
 *               created when missing, reused as is when present.
 *   password    read from the environment variable NEO4J_PASSWORD (default "graphrag-got",
 *               at least 8 characters), never from the command line so it stays out of `ps`.
 *
 * Bolt only (HTTP, routing and usage reports off), auth on for the user `neo4j`. Prints
 * `READY bolt://HOST:PORT` once the default database answers `RETURN 1` and the Bolt port accepts
 * connections; `FAILED <reason>` and exit code 1 when it cannot start. SIGTERM / Ctrl-C shut the
 * databases down cleanly (shutdown hook). graphrag_got.neo4j_server starts it with the JVM flags
 * Neo4j's own distribution ships (embedded mode must pass them itself).
 *
 * Keep the classpath Neo4j-only: other Netty versions (e.g. from a newer Java driver) break Bolt.
 */

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;

public class Launcher {

    static final String DEFAULT_PASSWORD = "graphrag-got";
    static final String USER = "neo4j";

    public static void main(String[] args) {
        String home = null;
        String host = "127.0.0.1";
        int port = 7687;
        long pagecache = ByteUnit.mebiBytes(128);
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--host" -> host = args[++i];
                    case "--port" -> port = Integer.parseInt(args[++i]);
                    case "--pagecache" -> pagecache = ByteUnit.parse(args[++i]);
                    default -> {
                        if (args[i].startsWith("--") || home != null) {
                            throw new IllegalArgumentException("unknown argument " + args[i]);
                        }
                        home = args[i];
                    }
                }
            }
            if (home == null) {
                throw new IllegalArgumentException("missing HOME folder");
            }
        } catch (RuntimeException e) {
            fail("usage: Launcher.java HOME [--host H] [--port N] [--pagecache 128m] (" + e.getMessage() + ")");
            return;
        }
        String password = System.getenv().getOrDefault("NEO4J_PASSWORD", "");
        if (password.isEmpty()) {
            password = DEFAULT_PASSWORD;
        }
        if (password.length() < 8) {
            fail("NEO4J_PASSWORD must have at least 8 characters (Neo4j's minimum)");
            return;
        }
        // A clear message instead of Netty's BindException deep in Neo4j's start-up.
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(host, port));
        } catch (IOException e) {
            fail("cannot listen on " + host + ":" + port + " (" + e.getMessage()
                    + "): another server already uses this port");
            return;
        }

        Path homePath = Path.of(home).toAbsolutePath();
        DatabaseManagementService dbms;
        try {
            Files.createDirectories(homePath);
            dbms = new DatabaseManagementServiceBuilder(homePath)
                    .setConfig(BoltConnector.enabled, true)
                    .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
                    .setConfig(BoltConnector.advertised_address, new SocketAddress(host, port))
                    // Neo4j waits 2 x 5 s for Bolt threads by default on shutdown; 1 s is plenty here.
                    .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
                    .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1))
                    .setConfig(HttpConnector.enabled, false)
                    .setConfig(HttpsConnector.enabled, false)
                    .setConfig(GraphDatabaseSettings.default_listen_address, new SocketAddress(host))
                    .setConfig(GraphDatabaseSettings.routing_enabled, false)
                    .setConfig(GraphDatabaseSettings.udc_enabled, false)
                    .setConfig(GraphDatabaseSettings.auth_enabled, true)
                    .setConfig(GraphDatabaseSettings.pagecache_memory, pagecache)
                    .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                    .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(64))
                    .setConfig(GraphDatabaseSettings.keep_logical_logs, "2 files")
                    .build();
        } catch (Throwable e) {
            e.printStackTrace();
            fail("Neo4j did not start: " + rootMessage(e));
            return;
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("STOPPING");
            System.out.flush();
            try {
                dbms.shutdown();
            } finally {
                System.out.println("STOPPED");
                System.out.flush();
                stopped.countDown();
            }
        }, "graphrag-got-neo4j-shutdown"));

        try {
            setPassword(dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME), password);
            GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            db.executeTransactionally("RETURN 1");
            waitForPort(host, port, Duration.ofSeconds(60));
        } catch (Throwable e) {
            e.printStackTrace();
            fail("Neo4j started but is not usable: " + rootMessage(e));
            return; // System.exit in fail() runs the shutdown hook
        }
        long uptimeMs = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime();
        System.out.printf("STARTED in %.1f s (JVM uptime; home %s)%n", uptimeMs / 1000.0, homePath);
        System.out.println("READY bolt://" + host + ":" + port);
        System.out.flush();
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Sets the password of `neo4j` and clears the "change required" flag. Works on a fresh home
     * (password "neo4j", change required) and on an existing one, where Neo4j refuses to set the
     * same password again: then only the flag is cleared.
     */
    static void setPassword(GraphDatabaseService system, String password) {
        try {
            system.executeTransactionally(
                    "ALTER USER " + USER + " SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        } catch (RuntimeException e) {
            if (!rootMessage(e).toLowerCase().contains("cannot be the same")) {
                throw e;
            }
            system.executeTransactionally("ALTER USER " + USER + " SET PASSWORD CHANGE NOT REQUIRED");
        }
    }

    static void waitForPort(String host, int port, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 1000);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("Bolt port " + host + ":" + port + " does not accept connections", e);
                }
                Thread.sleep(200);
            }
        }
    }

    static String rootMessage(Throwable e) {
        Throwable t = e;
        StringBuilder sb = new StringBuilder(String.valueOf(e.getMessage()));
        List<Throwable> seen = new java.util.ArrayList<>();
        while (t.getCause() != null && !seen.contains(t.getCause())) {
            seen.add(t);
            t = t.getCause();
            if (t.getMessage() != null && !sb.toString().contains(t.getMessage())) {
                sb.append(": ").append(t.getMessage());
            }
        }
        return sb.toString();
    }

    static void fail(String message) {
        System.out.println("FAILED " + message.replace('\n', ' '));
        System.out.flush();
        System.exit(1);
    }
}

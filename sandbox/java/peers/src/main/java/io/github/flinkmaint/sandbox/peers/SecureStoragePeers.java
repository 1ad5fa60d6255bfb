package io.github.flinkmaint.sandbox.peers;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSNNTopology;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.UserGroupInformation;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

/**
 * The production-shaped storage peer of the sandbox, in one JVM: a Kerberos KDC (Apache Kerby via
 * hadoop-minikdc), and a kerberized HDFS with two NameNodes behind the nameservice {@code ns1}
 * (MiniDFSCluster, shared-edits HA) and one DataNode. RPC and block transfer are SASL-protected
 * the way production clusters set them ({@code hadoop.rpc.protection} privacy,
 * {@code dfs.data.transfer.protection} authentication, block access tokens; see the README for
 * why not privacy on data transfer), the client protocol is limited by a
 * service-level ACL, and tickets live only {@code --ticket-lifetime} seconds.
 *
 * <p>Principals (realm EXAMPLE.COM), each with its own keytab under {@code <work-dir>/keytabs}:
 * {@code hdfs/localhost} and {@code HTTP/localhost} (the NameNodes and the DataNode),
 * {@code flinkmaint} (the worker, in the HDFS superuser group), {@code flink} (owns the tenant
 * roots) and {@code intruder} (authenticates but the client-protocol ACL refuses it).
 *
 * <p>It writes a client {@code HADOOP_CONF_DIR} ({@code core-site.xml}, {@code hdfs-site.xml}),
 * a {@code krb5.conf} and an env-style ready file that run.sh turns into secure.json. A control
 * endpoint on 127.0.0.1 lets tests fail the NameNodes over while clients run:
 * {@code GET /state}, {@code POST /failover} (active to standby, the other to active) and
 * {@code POST /failover?mode=stop} (shut the active NameNode down so that clients see connection
 * refused, then make the other active), {@code POST /restart?nn=nn1} (bring a stopped NameNode
 * back as standby). Everything is fresh on every start; it runs until SIGTERM.
 */
public final class SecureStoragePeers {
    static final String NAMESERVICE = "ns1";
    static final String[] NN_IDS = {"nn1", "nn2"};
    static final String SUPERGROUP = "supergroup";

    private SecureStoragePeers() {}

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(
                argv,
                Set.of("work-dir", "ready-file", "tenant", "namespace-quota", "ticket-lifetime",
                        "rpc-protection", "data-transfer-protection"),
                Set.of());
        File work = new File(args.required("work-dir")).getAbsoluteFile();
        File readyFile = new File(args.required("ready-file")).getAbsoluteFile();
        long quota = args.longValue("namespace-quota", 15000, 1);
        int lifetime = args.intValue("ticket-lifetime", 120, 60, 86400);
        String rpcProtection = oneOf("rpc-protection", args.get("rpc-protection", "privacy"));
        String dataProtection = oneOf("data-transfer-protection", args.get("data-transfer-protection", "authentication"));
        List<String> tenants = args.all("tenant");
        for (String t : tenants) {
            if (!t.matches("[a-z0-9][a-z0-9-]*")) {
                throw new IllegalArgumentException("--tenant '" + t + "' must match [a-z0-9][a-z0-9-]*");
            }
        }

        Files.deleteIfExists(readyFile.toPath());
        if (work.exists()) {
            FileUtil.fullyDelete(work);
        }
        File kdcDir = new File(work, "kdc");
        File keytabs = new File(work, "keytabs");
        File confDir = new File(work, "hadoop-conf");
        for (File d : new File[] {kdcDir, keytabs, confDir, new File(work, "hdfs")}) {
            if (!d.mkdirs()) {
                throw new IOException("cannot create " + d);
            }
        }

        // ---------------------------------------------------------------- KDC
        Properties kdcConf = MiniKdc.createConf();
        kdcConf.setProperty(MiniKdc.KDC_BIND_ADDRESS, "127.0.0.1");
        kdcConf.setProperty(MiniKdc.MAX_TICKET_LIFETIME, String.valueOf(lifetime * 1000L));
        // Renewable for two lifetimes: a long run must both renew and log in again.
        kdcConf.setProperty(MiniKdc.MAX_RENEWABLE_LIFETIME, String.valueOf(2 * lifetime * 1000L));
        MiniKdc kdc = new MiniKdc(kdcConf, kdcDir);
        kdc.start();
        String realm = kdc.getRealm();
        File krb5 = new File(work, "krb5.conf");
        writeKrb5Conf(krb5, realm, kdc.getPort(), lifetime);
        // The KDC wrote its own krb5.conf and pointed the JVM at it; ours adds the settings
        // Go clients need (TCP, no DNS), so the JVM uses it too.
        System.setProperty(MiniKdc.JAVA_SECURITY_KRB5_CONF, krb5.getAbsolutePath());
        System.out.println("KDC realm " + realm + " on 127.0.0.1:" + kdc.getPort() + ", ticket lifetime " + lifetime + " s");

        String service = "hdfs/localhost";
        File serviceKeytab = new File(keytabs, "hdfs.keytab");
        kdc.createPrincipal(serviceKeytab, service, "HTTP/localhost");
        Map<String, File> users = new LinkedHashMap<>();
        for (String u : new String[] {"flinkmaint", "flink", "intruder"}) {
            File kt = new File(keytabs, u + ".keytab");
            kdc.createPrincipal(kt, u);
            users.put(u, kt);
        }
        String servicePrincipal = service + "@" + realm;

        // ---------------------------------------------------------------- HDFS
        int[] ports = {freePort(), freePort()};
        Configuration conf = new HdfsConfiguration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(work, "hdfs").getAbsolutePath());
        conf.setLong("dfs.blocksize", 8L * 1024 * 1024);
        conf.setInt("dfs.replication", 1);
        conf.setBoolean("dfs.permissions.enabled", true);
        conf.setLong("fs.trash.interval", 0);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.servicerpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.http-bind-host", "127.0.0.1");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        security(conf, realm, servicePrincipal, serviceKeytab, rpcProtection, dataProtection);
        conf.set("dfs.namenode.keytab.file", serviceKeytab.getAbsolutePath());
        conf.set("dfs.datanode.keytab.file", serviceKeytab.getAbsolutePath());
        conf.set("dfs.web.authentication.kerberos.principal", "HTTP/localhost@" + realm);
        conf.set("dfs.web.authentication.kerberos.keytab", serviceKeytab.getAbsolutePath());
        // The DataNode listens on unprivileged ports over HTTP; SASL on data transfer is what
        // protects blocks (production adds HTTPS for the web UI, which no client here uses).
        conf.setBoolean("ignore.secure.ports.for.testing", true);
        // Servers log in again from their keytabs before tickets run out.
        conf.setBoolean("hadoop.kerberos.keytab.login.autorenewal.enabled", true);
        conf.setLong("hadoop.kerberos.min.seconds.before.relogin", 10);
        // Clients fail over quickly in this single-host sandbox.
        conf.setInt("dfs.client.failover.max.attempts", 30);
        conf.setInt("dfs.client.failover.sleep.base.millis", 100);
        conf.setInt("dfs.client.failover.sleep.max.millis", 1000);

        UserGroupInformation.setConfiguration(conf);
        MiniDFSTopology topo = new MiniDFSTopology(ports);
        MiniDFSCluster hdfs = new MiniDFSCluster.Builder(conf)
                .nnTopology(topo.topology)
                .numDataNodes(1)
                .format(true)
                .manageNameDfsDirs(true)
                .manageDataDfsDirs(true)
                .build();
        UserGroupInformation hdfsUser = UserGroupInformation.loginUserFromKeytabAndReturnUGI(
                servicePrincipal, serviceKeytab.getAbsolutePath());
        hdfsUser.doAs((PrivilegedExceptionAction<Void>) () -> {
            hdfs.transitionToActive(0);
            hdfs.waitActive();
            return null;
        });
        String[] addrs = {"127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1]};
        System.out.println("HDFS nameservice " + NAMESERVICE + ": " + NN_IDS[0] + " " + addrs[0] + " (active), "
                + NN_IDS[1] + " " + addrs[1] + " (standby)");

        writeClientConf(confDir, realm, servicePrincipal, addrs, rpcProtection, dataProtection);
        hdfsUser.doAs((PrivilegedExceptionAction<Void>) () -> {
            DistributedFileSystem dfs = hdfs.getFileSystem(0);
            for (String tenant : tenants) {
                Path root = new Path("/user/app/" + tenant);
                if (!dfs.mkdirs(root)) {
                    throw new IOException("mkdirs " + root + " failed");
                }
                dfs.setOwner(root, "flink", "flink");
                dfs.setPermission(root, new FsPermission((short) 0750));
                dfs.setQuota(root, quota, HdfsConstants.QUOTA_DONT_SET);
                System.out.println("tenant root " + root + " owner flink, namespace quota " + quota);
            }
            return null;
        });

        // ---------------------------------------------------------------- control
        Control control = new Control(hdfs, hdfsUser, addrs);
        HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        http.createContext("/", control::handle);
        http.start();
        String controlUrl = "http://127.0.0.1:" + http.getAddress().getPort();
        System.out.println("control endpoint " + controlUrl);

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("stopping the control endpoint, HDFS and the KDC");
            try {
                http.stop(0);
                hdfs.shutdown();
            } finally {
                kdc.stop();
                stopped.countDown();
            }
        }, "secure-storage-shutdown"));

        List<String> lines = new ArrayList<>();
        lines.add("NAMESERVICE=" + NAMESERVICE);
        lines.add("NN1_ADDRESS=" + addrs[0]);
        lines.add("NN2_ADDRESS=" + addrs[1]);
        lines.add("CONTROL_URL=" + controlUrl);
        lines.add("REALM=" + realm);
        lines.add("KDC_ADDRESS=127.0.0.1:" + kdc.getPort());
        lines.add("KRB5_CONF=" + krb5.getAbsolutePath());
        lines.add("HADOOP_CONF_DIR=" + confDir.getAbsolutePath());
        lines.add("SERVICE_PRINCIPAL=" + servicePrincipal);
        lines.add("SERVICE_KEYTAB=" + serviceKeytab.getAbsolutePath());
        for (Map.Entry<String, File> u : users.entrySet()) {
            String key = u.getKey().toUpperCase();
            lines.add(key + "_PRINCIPAL=" + u.getKey() + "@" + realm);
            lines.add(key + "_KEYTAB=" + u.getValue().getAbsolutePath());
        }
        lines.add("TICKET_LIFETIME_SECONDS=" + lifetime);
        lines.add("RPC_PROTECTION=" + rpcProtection);
        lines.add("DATA_TRANSFER_PROTECTION=" + dataProtection);
        lines.add("PID=" + ProcessHandle.current().pid());
        File tmp = new File(readyFile.getPath() + ".tmp");
        Files.write(tmp.toPath(), lines, StandardCharsets.UTF_8);
        Files.move(tmp.toPath(), readyFile.toPath(), StandardCopyOption.ATOMIC_MOVE);
        System.out.println("secure storage peers ready");
        stopped.await();
    }

    private static String oneOf(String option, String v) {
        if (!v.equals("authentication") && !v.equals("integrity") && !v.equals("privacy")) {
            throw new IllegalArgumentException(
                    "option --" + option + " = '" + v + "': want authentication, integrity or privacy");
        }
        return v;
    }

    /** The security settings servers and clients share. */
    static void security(Configuration conf, String realm, String servicePrincipal, File serviceKeytab,
            String rpcProtection, String dataProtection) {
        conf.set("hadoop.security.authentication", "kerberos");
        conf.setBoolean("hadoop.security.authorization", true);
        conf.set("hadoop.rpc.protection", rpcProtection);
        conf.set("dfs.namenode.kerberos.principal", servicePrincipal);
        conf.set("dfs.datanode.kerberos.principal", servicePrincipal);
        conf.setBoolean("dfs.block.access.token.enable", true);
        conf.set("dfs.data.transfer.protection", dataProtection);
        // Only these users may speak the client protocol; intruder authenticates and is refused.
        conf.set("security.client.protocol.acl", "hdfs,flink,flinkmaint " + SUPERGROUP);
        // Groups without an OS account: the worker is in the HDFS superuser group.
        conf.set("hadoop.user.group.static.mapping.overrides",
                "dr.who=;hdfs=" + SUPERGROUP + ";flinkmaint=" + SUPERGROUP + ";flink=flink;intruder=intruder");
        conf.set("dfs.permissions.superusergroup", SUPERGROUP);
        // The worker may act for the Flink user (a proxy user), as production clusters allow.
        conf.set("hadoop.proxyuser.flinkmaint.hosts", "127.0.0.1,localhost");
        conf.set("hadoop.proxyuser.flinkmaint.users", "flink");
    }

    private static void writeClientConf(File dir, String realm, String servicePrincipal, String[] addrs,
            String rpcProtection, String dataProtection) throws IOException {
        Map<String, String> core = new LinkedHashMap<>();
        core.put("fs.defaultFS", "hdfs://" + NAMESERVICE);
        core.put("hadoop.security.authentication", "kerberos");
        core.put("hadoop.rpc.protection", rpcProtection);
        writeXml(new File(dir, "core-site.xml"), core);
        Map<String, String> hdfs = new LinkedHashMap<>();
        hdfs.put("dfs.nameservices", NAMESERVICE);
        hdfs.put("dfs.ha.namenodes." + NAMESERVICE, NN_IDS[0] + "," + NN_IDS[1]);
        for (int i = 0; i < NN_IDS.length; i++) {
            hdfs.put("dfs.namenode.rpc-address." + NAMESERVICE + "." + NN_IDS[i], addrs[i]);
        }
        hdfs.put("dfs.client.failover.proxy.provider." + NAMESERVICE,
                "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider");
        hdfs.put("dfs.namenode.kerberos.principal", servicePrincipal);
        hdfs.put("dfs.datanode.kerberos.principal", servicePrincipal);
        hdfs.put("dfs.block.access.token.enable", "true");
        hdfs.put("dfs.data.transfer.protection", dataProtection);
        hdfs.put("dfs.replication", "1");
        hdfs.put("dfs.client.failover.max.attempts", "30");
        hdfs.put("dfs.client.failover.sleep.base.millis", "100");
        hdfs.put("dfs.client.failover.sleep.max.millis", "1000");
        writeXml(new File(dir, "hdfs-site.xml"), hdfs);
    }

    private static void writeXml(File f, Map<String, String> props) throws IOException {
        StringBuilder b = new StringBuilder("<?xml version=\"1.0\"?>\n"
                + "<!-- Generated by SecureStoragePeers for the sandbox's kerberized HA HDFS; rewritten on every start. -->\n"
                + "<configuration>\n");
        for (Map.Entry<String, String> e : props.entrySet()) {
            b.append("  <property><name>").append(e.getKey()).append("</name><value>")
                    .append(e.getValue()).append("</value></property>\n");
        }
        b.append("</configuration>\n");
        Files.writeString(f.toPath(), b.toString(), StandardCharsets.UTF_8);
    }

    private static void writeKrb5Conf(File f, String realm, int port, int lifetime) throws IOException {
        String s = "# Generated by SecureStoragePeers; the sandbox KDC (Apache Kerby) on 127.0.0.1.\n"
                + "[libdefaults]\n"
                + "  default_realm = " + realm + "\n"
                + "  udp_preference_limit = 1\n"
                + "  dns_lookup_kdc = false\n"
                + "  dns_lookup_realm = false\n"
                + "  rdns = false\n"
                + "  ticket_lifetime = " + lifetime + "s\n"
                + "  renew_lifetime = " + (2 * lifetime) + "s\n"
                + "  forwardable = true\n"
                + "[realms]\n"
                + "  " + realm + " = {\n"
                + "    kdc = 127.0.0.1:" + port + "\n"
                + "  }\n"
                + "[domain_realm]\n"
                + "  localhost = " + realm + "\n";
        Files.writeString(f.toPath(), s, StandardCharsets.UTF_8);
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** The nameservice topology: two NameNodes on the given RPC ports. */
    private static final class MiniDFSTopology {
        final MiniDFSNNTopology topology;

        MiniDFSTopology(int[] ports) {
            MiniDFSNNTopology.NSConf ns = new MiniDFSNNTopology.NSConf(NAMESERVICE);
            for (int i = 0; i < NN_IDS.length; i++) {
                ns.addNN(new MiniDFSNNTopology.NNConf(NN_IDS[i]).setIpcPort(ports[i]));
            }
            topology = new MiniDFSNNTopology().addNameservice(ns);
        }
    }

    /** The control endpoint: NameNode states and failover on request. */
    private static final class Control {
        private final MiniDFSCluster hdfs;
        private final UserGroupInformation admin;
        private final String[] addrs;
        private final boolean[] stopped = new boolean[NN_IDS.length];
        private int failovers;

        Control(MiniDFSCluster hdfs, UserGroupInformation admin, String[] addrs) {
            this.hdfs = hdfs;
            this.admin = admin;
            this.addrs = addrs;
        }

        void handle(HttpExchange ex) throws IOException {
            int code = 200;
            String body;
            try {
                String path = ex.getRequestURI().getPath();
                String query = ex.getRequestURI().getQuery();
                String method = ex.getRequestMethod();
                if (path.equals("/state") && method.equals("GET")) {
                    body = state();
                } else if (path.equals("/failover") && method.equals("POST")) {
                    boolean stop = "mode=stop".equals(query);
                    if (query != null && !stop) {
                        throw new IllegalArgumentException("query '" + query + "': want none or mode=stop");
                    }
                    body = failover(stop);
                } else if (path.equals("/restart") && method.equals("POST")) {
                    body = restart(query == null ? "" : query.replaceFirst("^nn=", ""));
                } else {
                    code = 404;
                    body = "{\"error\":\"" + method + " " + path
                            + ": want GET /state, POST /failover[?mode=stop], POST /restart?nn=nn1|nn2\"}";
                }
            } catch (IllegalArgumentException | IllegalStateException e) {
                code = 400;
                body = "{\"error\":\"" + e.getMessage().replace("\"", "'") + "\"}";
            } catch (Exception e) {
                e.printStackTrace();
                code = 500;
                body = "{\"error\":\"" + String.valueOf(e).replace("\"", "'").replace("\n", " ") + "\"}";
            }
            byte[] out = (body + "\n").getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.sendResponseHeaders(code, out.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(out);
            }
        }

        private synchronized String state() {
            StringBuilder b = new StringBuilder("{\"failovers\":" + failovers + ",\"namenodes\":[");
            for (int i = 0; i < NN_IDS.length; i++) {
                String st = stopped[i] ? "stopped" : haState(i);
                b.append(i == 0 ? "" : ",").append("{\"id\":\"").append(NN_IDS[i]).append("\",\"address\":\"")
                        .append(addrs[i]).append("\",\"state\":\"").append(st).append("\"}");
            }
            return b.append("]}").toString();
        }

        private String haState(int i) {
            return hdfs.getNameNode(i).getState().toLowerCase();
        }

        private int active() {
            for (int i = 0; i < NN_IDS.length; i++) {
                if (!stopped[i] && hdfs.getNameNode(i).isActiveState()) {
                    return i;
                }
            }
            throw new IllegalStateException("no NameNode is active");
        }

        private synchronized String failover(boolean stop) throws Exception {
            int from = active();
            int to = 1 - from;
            if (stopped[to]) {
                throw new IllegalStateException(NN_IDS[to] + " is stopped; POST /restart?nn=" + NN_IDS[to] + " first");
            }
            // Tickets are short; the admin login must be fresh for the clients the cluster makes.
            admin.checkTGTAndReloginFromKeytab();
            admin.doAs((PrivilegedExceptionAction<Void>) () -> {
                if (stop) {
                    hdfs.shutdownNameNode(from);
                    stopped[from] = true;
                } else {
                    hdfs.transitionToStandby(from);
                }
                hdfs.transitionToActive(to);
                return null;
            });
            failovers++;
            System.out.println("failover " + failovers + ": " + NN_IDS[from] + (stop ? " stopped" : " standby")
                    + ", " + NN_IDS[to] + " active");
            return state();
        }

        private synchronized String restart(String id) throws Exception {
            int i = List.of(NN_IDS).indexOf(id);
            if (i < 0) {
                throw new IllegalArgumentException("nn '" + id + "': want nn1 or nn2");
            }
            if (!stopped[i]) {
                throw new IllegalStateException(id + " is running");
            }
            admin.checkTGTAndReloginFromKeytab();
            admin.doAs((PrivilegedExceptionAction<Void>) () -> {
                hdfs.restartNameNode(i, true);
                return null;
            });
            stopped[i] = false;
            System.out.println(id + " restarted as standby");
            return state();
        }
    }
}

package io.github.flinkmaint.sandbox.peers;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.configuration.SecurityOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.plugin.PluginUtils;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.RpcServiceSharing;
import org.apache.flink.runtime.security.SecurityConfiguration;
import org.apache.flink.runtime.security.SecurityUtils;

import java.io.File;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One Flink session cluster (JobManager with REST endpoint and web submission, plus one
 * TaskManager) in this JVM, configured from a Flink config dir (config.yaml). HA services come
 * from that config (ZooKeeper + HDFS storage), so the HA layout on HDFS is the production one.
 * A config that names a Kerberos keytab ({@code security.kerberos.login.keytab}) gets Flink's
 * security modules, as a packaged JobManager does: the JVM logs in from the keytab and every
 * HDFS call (checkpoints, savepoints, HA) is made as that principal.
 *
 * <p>Writes REST_URL=... to the ready file once the REST endpoint answers, then runs until SIGTERM.
 */
public final class FlinkSessionCluster {
    private FlinkSessionCluster() {}

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv, Set.of("conf-dir", "ready-file"), Set.of());
        File confDir = new File(args.required("conf-dir")).getAbsoluteFile();
        File readyFile = new File(args.required("ready-file")).getAbsoluteFile();
        if (!new File(confDir, "config.yaml").isFile()) {
            throw new IllegalArgumentException("--conf-dir " + confDir + " has no config.yaml");
        }
        Files.deleteIfExists(readyFile.toPath());

        Configuration conf = GlobalConfiguration.loadConfiguration(confDir.getPath());
        // Done by ClusterEntrypoint in a packaged Flink; without it hdfs:// is not resolvable.
        FileSystem.initialize(conf, PluginUtils.createPluginManagerFromRootFolder(conf));
        if (conf.contains(SecurityOptions.KERBEROS_LOGIN_KEYTAB)) {
            // ClusterEntrypoint does this after the file systems; the Hadoop module reads
            // HADOOP_CONF_DIR and logs in from the keytab.
            SecurityUtils.install(new SecurityConfiguration(conf));
            System.out.println("Kerberos login as " + conf.get(SecurityOptions.KERBEROS_LOGIN_PRINCIPAL)
                    + " from " + conf.get(SecurityOptions.KERBEROS_LOGIN_KEYTAB));
        }

        int slots = conf.get(TaskManagerOptions.NUM_TASK_SLOTS);
        MiniClusterConfiguration mcc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .setRpcServiceSharing(RpcServiceSharing.SHARED)
                .build();
        MiniCluster cluster = new MiniCluster(mcc);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("stopping Flink session cluster");
            try {
                // closeAsync keeps HA data (jobs recover on the next start), like a JobManager
                // process that is killed; only a finished job removes its HA entries.
                cluster.closeAsync().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.err.println("shutdown: " + e);
            } finally {
                stopped.countDown();
            }
        }, "flink-session-cluster-shutdown"));

        cluster.start();
        URI rest = cluster.getRestAddress().get(60, TimeUnit.SECONDS);
        System.out.println("Flink session cluster REST endpoint " + rest + " with " + slots + " slots");

        File tmp = new File(readyFile.getPath() + ".tmp");
        Files.write(
                tmp.toPath(),
                List.of("REST_URL=" + rest.toString().replaceAll("/+$", ""), "PID=" + ProcessHandle.current().pid()),
                StandardCharsets.UTF_8);
        Files.move(tmp.toPath(), readyFile.toPath(), StandardCopyOption.ATOMIC_MOVE);
        Thread keeper = new Thread(() -> keepTaskManager(cluster, stopped), "flink-session-cluster-taskmanager-keeper");
        keeper.setDaemon(true);
        keeper.start();
        stopped.await();
    }

    /**
     * Starts a new TaskManager when the cluster has none, as Kubernetes restarts a crashed
     * TaskManager pod. A MiniCluster does not: a TaskManager that fails fatally (e.g. a task that
     * does not cancel within task.cancellation.timeout) leaves every later job of this shared
     * cluster without slots.
     */
    private static void keepTaskManager(MiniCluster cluster, CountDownLatch stopped) {
        int missing = 0;
        while (stopped.getCount() > 0) {
            try {
                if (stopped.await(2, TimeUnit.SECONDS)) {
                    return;
                }
                int connected = cluster.requestClusterOverview().get(10, TimeUnit.SECONDS).getNumTaskManagersConnected();
                missing = connected == 0 ? missing + 1 : 0;
                // Two checks in a row: a TaskManager that just started may not have registered yet.
                if (missing >= 2 && stopped.getCount() > 0) {
                    System.out.println("no TaskManager is connected; starting a new one");
                    cluster.startTaskManager();
                    missing = 0;
                }
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                // No leader yet (HA election after a restart) or shutting down: ask again.
                missing = 0;
            }
        }
    }
}

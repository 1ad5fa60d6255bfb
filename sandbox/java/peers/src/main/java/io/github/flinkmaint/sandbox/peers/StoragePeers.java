package io.github.flinkmaint.sandbox.peers;

import org.apache.flink.shaded.zookeeper3.org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.flink.shaded.zookeeper3.org.apache.zookeeper.server.ZooKeeperServer;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

/**
 * Starts the storage peers of the sandbox in one JVM: a one-DataNode HDFS (MiniDFSCluster) and a
 * standalone ZooKeeper for Flink HA, both on 127.0.0.1. HDFS and ZooKeeper data are fresh on every
 * start: checkpoint paths embed the NameNode port, which is picked anew each time.
 *
 * <p>When both are up it creates each tenant root with its namespace quota and writes an env-style
 * file (NAMENODE_PORT=..., ZOOKEEPER_PORT=..., HDFS_USER=...) that run.sh reads. It runs until
 * SIGTERM.
 */
public final class StoragePeers {
    private StoragePeers() {}

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(
                argv,
                Set.of("data-dir", "ready-file", "namenode-port", "zookeeper-port", "tenant", "namespace-quota"),
                Set.of());
        File dataDir = new File(args.required("data-dir")).getAbsoluteFile();
        File readyFile = new File(args.required("ready-file")).getAbsoluteFile();
        int nnPort = args.intValue("namenode-port", 0, 0, 65535);
        int zkPort = args.intValue("zookeeper-port", 0, 0, 65535);
        long quota = args.longValue("namespace-quota", 15000, 1);
        List<String> tenants = args.all("tenant");
        for (String t : tenants) {
            if (!t.matches("[a-z0-9][a-z0-9-]*")) {
                throw new IllegalArgumentException("--tenant '" + t + "' must match [a-z0-9][a-z0-9-]*");
            }
        }

        Files.deleteIfExists(readyFile.toPath());
        if (dataDir.exists()) {
            FileUtil.fullyDelete(dataDir);
        }
        if (!dataDir.mkdirs()) {
            throw new IOException("cannot create data dir " + dataDir);
        }

        ZooKeeperServer zk = new ZooKeeperServer(
                new File(dataDir, "zookeeper/snap"), new File(dataDir, "zookeeper/log"), 2000);
        ServerCnxnFactory zkConnections =
                ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", zkPort), 500);
        zkConnections.startup(zk);
        System.out.println("ZooKeeper listening on 127.0.0.1:" + zkConnections.getLocalPort());

        Configuration conf = new HdfsConfiguration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(dataDir, "hdfs").getAbsolutePath());
        // Small blocks keep the single DataNode's disk use proportional to the tiny state files.
        conf.setLong("dfs.blocksize", 8L * 1024 * 1024);
        conf.setInt("dfs.replication", 1);
        conf.setBoolean("dfs.permissions.enabled", true);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.servicerpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.http-bind-host", "127.0.0.1");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        // Deleted files go away at once: quota tests count what is on disk.
        conf.setLong("fs.trash.interval", 0);
        MiniDFSCluster hdfs = new MiniDFSCluster.Builder(conf)
                .nameNodePort(nnPort)
                .nameNodeHttpPort(0)
                .numDataNodes(1)
                .format(true)
                .manageNameDfsDirs(true)
                .manageDataDfsDirs(true)
                .build();
        hdfs.waitActive();
        int actualNnPort = hdfs.getNameNodePort();
        String user = org.apache.hadoop.security.UserGroupInformation.getCurrentUser().getShortUserName();
        System.out.println("HDFS NameNode listening on 127.0.0.1:" + actualNnPort + " (superuser " + user + ")");

        DistributedFileSystem dfs = hdfs.getFileSystem();
        for (String tenant : tenants) {
            Path root = new Path("/user/app/" + tenant);
            if (!dfs.mkdirs(root)) {
                throw new IOException("mkdirs " + root + " failed");
            }
            dfs.setQuota(root, quota, HdfsConstants.QUOTA_DONT_SET);
            System.out.println("tenant root " + root + " namespace quota " + quota);
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("stopping HDFS and ZooKeeper");
            try {
                hdfs.shutdown();
            } finally {
                zkConnections.shutdown();
                zk.shutdown();
                stopped.countDown();
            }
        }, "storage-peers-shutdown"));

        List<String> lines = new ArrayList<>();
        lines.add("NAMENODE_PORT=" + actualNnPort);
        lines.add("ZOOKEEPER_PORT=" + zkConnections.getLocalPort());
        lines.add("HDFS_USER=" + user);
        lines.add("PID=" + ProcessHandle.current().pid());
        File tmp = new File(readyFile.getPath() + ".tmp");
        Files.write(tmp.toPath(), lines, StandardCharsets.UTF_8);
        Files.move(tmp.toPath(), readyFile.toPath(), StandardCopyOption.ATOMIC_MOVE);
        System.out.println("storage peers ready");
        stopped.await();
    }
}

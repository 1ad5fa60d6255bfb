package io.github.flinkmaint.sandbox.peers;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ContentSummary;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;

import java.net.URI;

/**
 * Namespace quota admin for the sandbox HDFS, through DistributedFileSystem.setQuota (the call
 * behind "hdfs dfsadmin -setQuota").
 *
 * <pre>
 *   HdfsQuota hdfs://127.0.0.1:PORT set   /path N   # N files+dirs, N >= 1
 *   HdfsQuota hdfs://127.0.0.1:PORT clear /path
 *   HdfsQuota hdfs://127.0.0.1:PORT get   /path     # prints "quota=N used=M" (quota=-1: none)
 * </pre>
 * Exit code 2 on bad usage, 1 on an HDFS error (message on stderr).
 */
public final class HdfsQuota {
    private HdfsQuota() {}

    public static void main(String[] argv) {
        try {
            System.out.println(run(argv));
        } catch (IllegalArgumentException e) {
            System.err.println("HdfsQuota: " + e.getMessage());
            System.exit(2);
        } catch (Exception e) {
            System.err.println("HdfsQuota: " + e);
            System.exit(1);
        }
    }

    static String run(String[] argv) throws Exception {
        if (argv.length < 3) {
            throw new IllegalArgumentException("usage: HdfsQuota <hdfs-uri> set <path> <n> | clear <path> | get <path>");
        }
        URI uri = URI.create(argv[0]);
        if (!"hdfs".equals(uri.getScheme())) {
            throw new IllegalArgumentException("file system URI '" + argv[0] + "' must use the hdfs:// scheme");
        }
        String op = argv[1];
        Path path = new Path(argv[2]);
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException("path '" + argv[2] + "' must be absolute");
        }
        Configuration conf = new Configuration();
        try (FileSystem fs = FileSystem.newInstance(uri, conf)) {
            if (!(fs instanceof DistributedFileSystem)) {
                throw new IllegalArgumentException(argv[0] + " is not an HDFS file system");
            }
            DistributedFileSystem dfs = (DistributedFileSystem) fs;
            switch (op) {
                case "set": {
                    if (argv.length != 4) {
                        throw new IllegalArgumentException("usage: set <path> <n>");
                    }
                    long n;
                    try {
                        n = Long.parseLong(argv[3]);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("quota '" + argv[3] + "' is not an integer");
                    }
                    if (n < 1) {
                        throw new IllegalArgumentException("quota " + n + " must be >= 1 (use clear to remove it)");
                    }
                    dfs.setQuota(path, n, HdfsConstants.QUOTA_DONT_SET);
                    return describe(dfs, path);
                }
                case "clear":
                    dfs.setQuota(path, HdfsConstants.QUOTA_RESET, HdfsConstants.QUOTA_DONT_SET);
                    return describe(dfs, path);
                case "get":
                    return describe(dfs, path);
                default:
                    throw new IllegalArgumentException("operation '" + op + "' is not one of set, clear, get");
            }
        }
    }

    private static String describe(DistributedFileSystem dfs, Path path) throws Exception {
        ContentSummary cs = dfs.getContentSummary(path);
        return "quota=" + cs.getQuota() + " used=" + (cs.getFileCount() + cs.getDirectoryCount());
    }
}

package io.github.flinkmaint.sandbox.peers;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.tools.DFSAdmin;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

import java.io.File;
import java.security.PrivilegedExceptionAction;
import java.util.Arrays;

/**
 * "hdfs dfs" and "hdfs dfsadmin" against the sandbox's kerberized HDFS, logged in from a keytab:
 *
 * <pre>
 *   SecureShell CONF_DIR PRINCIPAL KEYTAB dfs      -count -q /user/app/team-a
 *   SecureShell CONF_DIR PRINCIPAL KEYTAB dfsadmin -setQuota 100 /user/app/team-a
 * </pre>
 * CONF_DIR is the HADOOP_CONF_DIR SecureStoragePeers wrote (nameservice, principals, protection);
 * the JVM needs -Djava.security.krb5.conf pointing at its krb5.conf. Exit code: the tool's, 2 on
 * bad usage.
 */
public final class SecureShell {
    private SecureShell() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length < 5 || !(argv[3].equals("dfs") || argv[3].equals("dfsadmin"))) {
            System.err.println("usage: SecureShell CONF_DIR PRINCIPAL KEYTAB dfs|dfsadmin ARGS...");
            System.exit(2);
        }
        File dir = new File(argv[0]);
        for (String name : new String[] {"core-site.xml", "hdfs-site.xml"}) {
            if (!new File(dir, name).isFile()) {
                System.err.println("SecureShell: " + new File(dir, name) + " is missing; CONF_DIR must be the generated HADOOP_CONF_DIR");
                System.exit(2);
            }
        }
        Configuration conf = new HdfsConfiguration();
        conf.addResource(new Path(new File(dir, "core-site.xml").getAbsolutePath()));
        conf.addResource(new Path(new File(dir, "hdfs-site.xml").getAbsolutePath()));
        UserGroupInformation.setConfiguration(conf);
        UserGroupInformation ugi = UserGroupInformation.loginUserFromKeytabAndReturnUGI(argv[1], argv[2]);
        Tool tool = argv[3].equals("dfs") ? new FsShell(conf) : new DFSAdmin(conf);
        String[] rest = Arrays.copyOfRange(argv, 4, argv.length);
        int rc = ugi.doAs((PrivilegedExceptionAction<Integer>) () -> ToolRunner.run(tool, rest));
        System.exit(rc);
    }
}

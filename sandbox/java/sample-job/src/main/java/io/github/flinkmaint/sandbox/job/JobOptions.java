package io.github.flinkmaint.sandbox.job;

import java.util.List;

/**
 * Program arguments of the sample job. Bad input fails the submission with a message that names
 * the argument and what is valid.
 */
final class JobOptions {
    int keys = 10_000;
    int valueBytes = 512;
    int rate = 2_000;
    boolean failOnRestore;
    String checkpointDir;
    String jobName = "stateful-sample-job";
    String sink = "discard";
    String stateUid = DEFAULT_STATE_UID;
    String stateBackend;
    String forstPrimaryDir;
    boolean forstLocal;

    /**
     * Default of --state-uid: the uid of the keyed stateful operator. Another value makes the
     * operator a new one, so a savepoint of a job with the default does not map to it.
     */
    static final String DEFAULT_STATE_UID = "keyed-payload-state";

    /** Values of --sink: discard drops every record, print writes them to the TaskManager's stdout. */
    static final List<String> SINKS = List.of("discard", "print");

    /**
     * Values of --state-backend: the cluster's (RocksDB incremental) when absent; forst is
     * Flink 2.x's disaggregated backend, whose working files live on the DFS while the job runs.
     */
    static final List<String> STATE_BACKENDS = List.of("rocksdb", "forst");

    static final String USAGE = "valid arguments: --keys N (1..10000000, default 10000),"
            + " --value-bytes N (1..1048576, default 512), --rate N records/s (1..1000000, default 2000),"
            + " --fail-on-restore, --checkpoint-dir URI, --job-name NAME, --sink discard|print (default discard),"
            + " --state-uid UID (default " + DEFAULT_STATE_UID + "),"
            + " --state-backend rocksdb|forst (default: the cluster's), --forst-primary-dir URI (forst only),"
            + " --forst-local (forst only: synchronous state API, working state on local disk;"
            + " without it the keyed operator uses the async state API and ForSt keeps its working state on the DFS)";

    /** ForSt with its working state on the DFS: the keyed operator uses the async state API. */
    boolean asyncState() {
        return "forst".equals(stateBackend) && !forstLocal;
    }

    static JobOptions parse(String[] args) {
        JobOptions o = new JobOptions();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--fail-on-restore":
                    o.failOnRestore = true;
                    break;
                case "--keys":
                    o.keys = intArg(a, value(args, ++i, a), 1, 10_000_000);
                    break;
                case "--value-bytes":
                    o.valueBytes = intArg(a, value(args, ++i, a), 1, 1 << 20);
                    break;
                case "--rate":
                    o.rate = intArg(a, value(args, ++i, a), 1, 1_000_000);
                    break;
                case "--checkpoint-dir":
                    o.checkpointDir = value(args, ++i, a);
                    if (!o.checkpointDir.matches("[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
                        throw new IllegalArgumentException("--checkpoint-dir '" + o.checkpointDir
                                + "' must be a URI with a scheme, e.g. hdfs://127.0.0.1:9000/user/app/team-a/x");
                    }
                    break;
                case "--job-name":
                    o.jobName = value(args, ++i, a);
                    if (o.jobName.isBlank()) {
                        throw new IllegalArgumentException("--job-name must not be blank");
                    }
                    break;
                case "--sink":
                    o.sink = value(args, ++i, a);
                    if (!SINKS.contains(o.sink)) {
                        throw new IllegalArgumentException("--sink '" + o.sink + "' is not one of "
                                + String.join(", ", SINKS));
                    }
                    break;
                case "--state-uid":
                    o.stateUid = value(args, ++i, a);
                    if (o.stateUid.isBlank()) {
                        throw new IllegalArgumentException("--state-uid must not be blank");
                    }
                    break;
                case "--state-backend":
                    o.stateBackend = value(args, ++i, a);
                    if (!STATE_BACKENDS.contains(o.stateBackend)) {
                        throw new IllegalArgumentException("--state-backend '" + o.stateBackend + "' is not one of "
                                + String.join(", ", STATE_BACKENDS));
                    }
                    break;
                case "--forst-local":
                    o.forstLocal = true;
                    break;
                case "--forst-primary-dir":
                    o.forstPrimaryDir = value(args, ++i, a);
                    if (!o.forstPrimaryDir.matches("[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
                        throw new IllegalArgumentException("--forst-primary-dir '" + o.forstPrimaryDir
                                + "' must be a URI with a scheme, e.g. hdfs://127.0.0.1:9000/user/app/team-c/forst");
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument '" + a + "'; " + USAGE);
            }
        }
        if ((o.forstPrimaryDir != null || o.forstLocal) && !"forst".equals(o.stateBackend)) {
            throw new IllegalArgumentException((o.forstLocal ? "--forst-local" : "--forst-primary-dir")
                    + " needs --state-backend forst");
        }
        return o;
    }

    private static String value(String[] args, int i, String name) {
        if (i >= args.length) {
            throw new IllegalArgumentException(name + " needs a value; " + USAGE);
        }
        return args[i];
    }

    private static int intArg(String name, String raw, int min, int max) {
        int v;
        try {
            v = Integer.parseInt(raw);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " '" + raw + "' is not an integer; " + USAGE, e);
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + " " + v + " is out of range [" + min + ", " + max + "]");
        }
        return v;
    }
}

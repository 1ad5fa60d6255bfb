package io.github.flinkmaint.sandbox.job;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;

/**
 * State check for a {@link StatefulSampleJob} snapshot, the optional state assertion of a restore
 * drill: a restore that starts fine from an empty or truncated snapshot proves nothing, so the drill
 * can first check that the savepoint or retained checkpoint it restores from really holds the job's
 * keyed state.
 *
 * <p>Reads the keyed {@code ValueState<byte[]>} "payload" of operator uid "keyed-payload-state" with
 * the State Processor API and checks that it holds at least {@code --min-keys} keys and, with
 * {@code --value-bytes}, that every payload has exactly that length. It runs as a bounded BATCH job
 * without restarts, so it fits REST submission, where {@code main} never sees the job's result: the
 * job FINISHES when the state passes, and FAILS with a root cause starting "state check failed:"
 * (readable in {@code GET /jobs/{id}/exceptions}) when it does not. Arguments that are invalid, or a
 * snapshot without readable metadata, throw {@link IllegalArgumentException} from {@code main}, so the
 * run request itself fails.
 *
 * <p>The state is read with {@link EmbeddedRocksDBStateBackend}: it restores the sandbox's RocksDB
 * incremental checkpoints (native SST files) as well as canonical and native savepoints, while the
 * hashmap backend reads only the canonical format (it rejects incremental checkpoints' handles).
 *
 * <p>Arguments: {@code --snapshot URI} (required; savepoint or retained checkpoint directory, or its
 * {@code _metadata} file), {@code --min-keys N} (default 1), {@code --value-bytes N} (optional).
 */
public final class VerifyState {
    static final String OPERATOR_UID = "keyed-payload-state";
    static final String STATE_NAME = "payload";

    private VerifyState() {}

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);

        Configuration conf = new Configuration();
        conf.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.BATCH);
        // A failed check is final: no restarts (the cluster default retries 3 times).
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);

        SavepointReader reader;
        try {
            reader = SavepointReader.read(env, options.snapshot, new EmbeddedRocksDBStateBackend());
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("--snapshot '" + options.snapshot
                    + "' is not a readable savepoint or checkpoint: " + e, e);
        }

        TypeInformation<Stats> statsType = TypeInformation.of(Stats.class);
        // One record for an empty snapshot too, so the final check always runs.
        DataStream<Stats> stats = env.fromData(statsType, new Stats()).name("empty-stats");
        boolean operatorFound;
        try {
            DataStream<Stats> perKey = reader.readKeyedState(OperatorIdentifier.forUid(OPERATOR_UID),
                    new PayloadReader(options.valueBytes), Types.LONG, statsType);
            stats = stats.union(perKey);
            operatorFound = true;
        } catch (IOException e) {
            // The snapshot has no state entry for the operator (another job's snapshot): a failed
            // check, reported by the job like every other one.
            operatorFound = false;
        }

        stats.keyBy(new SingleKey(), Types.INT)
                .reduce(Stats::merge)
                .name("count-keys")
                .map(new Check(options, operatorFound))
                .name("check")
                .sinkTo(new DiscardingSink<>())
                .name("discard");
        env.execute("verify-state " + options.snapshot);
    }

    /** Per-key or aggregated payload statistics. A Flink POJO: public fields, no-arg constructor. */
    public static final class Stats {
        public long keys;
        /** Keys whose payload length differs from --value-bytes (0 without --value-bytes). */
        public long wrongSize;
        public int minBytes = Integer.MAX_VALUE;
        public int maxBytes = -1;

        public Stats() {}

        static Stats ofPayload(byte[] payload, int wantBytes) {
            Stats s = new Stats();
            int len = payload == null ? 0 : payload.length;
            s.keys = 1;
            s.wrongSize = wantBytes > 0 && len != wantBytes ? 1 : 0;
            s.minBytes = len;
            s.maxBytes = len;
            return s;
        }

        static Stats merge(Stats a, Stats b) {
            Stats s = new Stats();
            s.keys = a.keys + b.keys;
            s.wrongSize = a.wrongSize + b.wrongSize;
            s.minBytes = Math.min(a.minBytes, b.minBytes);
            s.maxBytes = Math.max(a.maxBytes, b.maxBytes);
            return s;
        }

        String sizes() {
            if (keys == 0) {
                return "none";
            }
            return minBytes == maxBytes ? minBytes + " bytes" : minBytes + ".." + maxBytes + " bytes";
        }
    }

    /** Emits one {@link Stats} per key holding a "payload" value. */
    static final class PayloadReader extends KeyedStateReaderFunction<Long, Stats> {
        private static final long serialVersionUID = 1L;
        private final int wantBytes;
        private transient ValueState<byte[]> payload;

        PayloadReader(int wantBytes) {
            this.wantBytes = wantBytes;
        }

        // One source for both Flink lines, so neither method says @Override: 1.20's
        // KeyedStateReaderFunction declares open(Configuration) abstract, 2.x removed it and
        // calls open(OpenContext). Whichever the runtime calls binds the state; both may run.
        public void open(Configuration parameters) {
            bindState();
        }

        public void open(OpenContext openContext) {
            bindState();
        }

        private void bindState() {
            payload = getRuntimeContext().getState(
                    new ValueStateDescriptor<>(STATE_NAME, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        }

        @Override
        public void readKey(Long key, Context ctx, Collector<Stats> out) throws Exception {
            out.collect(Stats.ofPayload(payload.value(), wantBytes));
        }
    }

    /** Sends every record to one reducer, which in BATCH mode emits the total once, at the end. */
    static final class SingleKey implements KeySelector<Stats, Integer> {
        private static final long serialVersionUID = 1L;

        @Override
        public Integer getKey(Stats value) {
            return 0;
        }
    }

    /** Fails the job when the totals miss the requirements. */
    static final class Check implements MapFunction<Stats, String> {
        private static final long serialVersionUID = 1L;
        private static final Logger LOG = LoggerFactory.getLogger(VerifyState.class);
        private final String snapshot;
        private final int minKeys;
        private final int valueBytes;
        private final boolean operatorFound;

        Check(Options options, boolean operatorFound) {
            this.snapshot = options.snapshot;
            this.minKeys = options.minKeys;
            this.valueBytes = options.valueBytes;
            this.operatorFound = operatorFound;
        }

        @Override
        public String map(Stats total) {
            String where = "operator " + OPERATOR_UID + " of " + snapshot;
            if (!operatorFound) {
                throw new IllegalStateException("state check failed: no state of " + where
                        + " (the snapshot has no operator with that uid), want at least " + minKeys
                        + (minKeys == 1 ? " key" : " keys"));
            }
            if (total.keys < minKeys) {
                throw new IllegalStateException("state check failed: " + total.keys + " keys in " + where
                        + ", want at least " + minKeys);
            }
            if (total.wrongSize > 0) {
                throw new IllegalStateException("state check failed: " + total.wrongSize + " of " + total.keys
                        + " payloads in " + where + " are not " + valueBytes + " bytes (sizes seen: "
                        + total.sizes() + ")");
            }
            String ok = "state check passed: " + total.keys + " keys in " + where + " (at least " + minKeys
                    + " wanted), payloads " + total.sizes();
            LOG.info(ok);
            return ok;
        }
    }

    /** Program arguments; bad input throws {@link IllegalArgumentException} naming the argument. */
    static final class Options {
        String snapshot;
        int minKeys = 1;
        /** 0: any length. */
        int valueBytes;

        static final String USAGE = "valid arguments: --snapshot URI (required; savepoint or retained"
                + " checkpoint directory), --min-keys N (0..2147483647, default 1),"
                + " --value-bytes N (1..1048576, optional: every payload must have that length)";

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--snapshot":
                        o.snapshot = value(args, ++i, a);
                        if (!o.snapshot.matches("[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
                            throw new IllegalArgumentException("--snapshot '" + o.snapshot
                                    + "' must be a URI with a scheme, e.g."
                                    + " hdfs://127.0.0.1:9000/user/app/team-a/savepoints/savepoint-1a2b3c-0123456789ab");
                        }
                        break;
                    case "--min-keys":
                        o.minKeys = intArg(a, value(args, ++i, a), 0, Integer.MAX_VALUE);
                        break;
                    case "--value-bytes":
                        o.valueBytes = intArg(a, value(args, ++i, a), 1, 1 << 20);
                        break;
                    default:
                        throw new IllegalArgumentException("unknown argument '" + a + "'; " + USAGE);
                }
            }
            if (o.snapshot == null) {
                throw new IllegalArgumentException("--snapshot is required; " + USAGE);
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
}

package io.github.flinkmaint.sandbox.job;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.PrintSink;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import java.util.SplittableRandom;

/**
 * Stateful sample job for the sandbox: a rate-limited sequence, keyed by {@code n % keys}, each
 * key holding a random byte payload in RocksDB, so incremental checkpoints upload real SST files
 * into the checkpoint's {@code shared/} dir. Operator uids are stable so savepoints map back;
 * only --state-uid changes one (the keyed stateful operator's), to make a restore that cannot map
 * that operator's state.
 * Arguments: see {@link JobOptions} and sandbox/java/README.md.
 */
public final class StatefulSampleJob {
    private StatefulSampleJob() {}

    public static void main(String[] args) throws Exception {
        JobOptions options = JobOptions.parse(args);

        Configuration conf = new Configuration();
        if (options.checkpointDir != null) {
            // Job-level setting: overrides the cluster's execution.checkpointing.dir for this job only.
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, options.checkpointDir);
        }
        if (options.stateBackend != null) {
            configureStateBackend(conf, options);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        // The arguments as global job parameters: GET /jobs/<id>/config shows which version runs.
        Configuration params = new Configuration();
        params.set(ConfigOptions.key("program-args").stringType().noDefaultValue(), String.join(" ", args));
        env.getConfig().setGlobalJobParameters(params);

        KeyedStream<Long, Long> keyed = env.fromSequence(0, Long.MAX_VALUE)
                .uid("sequence-source")
                .name("sequence-source")
                .map(new Throttle(options.rate))
                .uid("throttle")
                .name("throttle")
                .keyBy(new ModuloKey(options.keys));
        SingleOutputStreamOperator<Long> stateful = options.asyncState()
                ? asyncPayloadState(keyed, options)
                : keyed.process(new PayloadState(options.valueBytes, options.failOnRestore));
        stateful
                // "keyed-payload-state" unless --state-uid says otherwise; the name stays.
                .uid(options.stateUid)
                .name("keyed-payload-state")
                .sinkTo(sink(options.sink))
                // One uid for every --sink value: a savepoint taken with one sink restores with the other.
                .uid("discard-sink")
                .name(options.sink + "-sink");
        env.execute(options.jobName);
    }

    /**
     * Job-level state backend (--state-backend), by config keys so the class builds against both
     * Flink lines. ForSt exists only on 2.x clusters: asking for it elsewhere fails the submission.
     */
    static void configureStateBackend(Configuration conf, JobOptions options) {
        conf.setString("state.backend.type", options.stateBackend);
        if (!"forst".equals(options.stateBackend)) {
            return;
        }
        try {
            Class.forName(FORST_BACKEND, false, StatefulSampleJob.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("--state-backend forst needs a Flink 2.x cluster: "
                    + FORST_BACKEND + " is not on this cluster's classpath (valid here: rocksdb)", e);
        }
        // Without --forst-local the keyed operator uses the asynchronous state API (see
        // JobOptions#asyncState), with which ForSt keeps its working state on the DFS under the
        // primary dir while the job runs. --forst-local keeps the synchronous API, whose working
        // state ForSt keeps on local disk (state.backend.forst.sync.enforce-local, default true;
        // with it false, Flink 2.3.0 was seen to hang cancelling such a task until the
        // TaskManager's 180 s cancellation watchdog killed the TaskManager).
        if (options.forstPrimaryDir != null) {
            conf.setString("state.backend.forst.primary-dir", options.forstPrimaryDir);
        }
    }

    private static final String ASYNC_PAYLOAD_STATE = "io.github.flinkmaint.sandbox.job.AsyncPayloadState";

    /** The 2.x-only async-state operator (sample-job-flink2), by reflection. */
    @SuppressWarnings("unchecked")
    static SingleOutputStreamOperator<Long> asyncPayloadState(KeyedStream<Long, Long> keyed, JobOptions options) {
        if (options.failOnRestore) {
            throw new IllegalArgumentException("--fail-on-restore works with the synchronous state API only:"
                    + " use it with --state-backend rocksdb, or forst with --forst-local");
        }
        try {
            Class<?> c = Class.forName(ASYNC_PAYLOAD_STATE, true, StatefulSampleJob.class.getClassLoader());
            return (SingleOutputStreamOperator<Long>) c.getMethod("apply", KeyedStream.class, int.class)
                    .invoke(null, keyed, options.valueBytes);
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("--state-backend forst needs the sample job built for Flink 2.x ("
                    + ASYNC_PAYLOAD_STATE + " is not in this jar)", e);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot build the async-state operator: " + e, e);
        }
    }

    private static final String FORST_BACKEND = "org.apache.flink.state.forst.ForStStateBackend";

    /** The sink named by --sink (see {@link JobOptions#SINKS}); both are state-less. */
    static Sink<Long> sink(String name) {
        switch (name) {
            case "discard":
                return new DiscardingSink<>();
            case "print":
                // Sink v2 PrintSink (not the SinkFunction-based PrintSinkFunction): one line per record.
                return new PrintSink<>();
            default:
                throw new IllegalArgumentException("--sink '" + name + "' is not one of "
                        + String.join(", ", JobOptions.SINKS));
        }
    }

    /** Keeps the subtask at or below its share of the configured records/s. */
    static final class Throttle extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final int totalRate;
        private transient double perSubtaskRate;
        private transient long startNanos;
        private transient long emitted;

        Throttle(int totalRate) {
            this.totalRate = totalRate;
        }

        @Override
        public void open(OpenContext openContext) {
            int parallelism = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
            perSubtaskRate = Math.max(1.0, (double) totalRate / parallelism);
            startNanos = System.nanoTime();
        }

        @Override
        public Long map(Long value) throws Exception {
            emitted++;
            double dueSeconds = emitted / perSubtaskRate;
            long aheadMillis = (long) (dueSeconds * 1000) - (System.nanoTime() - startNanos) / 1_000_000;
            // Sleep in slices of at least 5 ms; short sleeps would burn a core on 2-core machines.
            if (aheadMillis >= 5) {
                Thread.sleep(aheadMillis);
            }
            return value;
        }
    }

    static final class ModuloKey implements KeySelector<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final long keys;

        ModuloKey(long keys) {
            this.keys = keys;
        }

        @Override
        public Long getKey(Long value) {
            return value % keys;
        }
    }

    /** Rewrites the key's payload with fresh random bytes on every record. */
    static final class PayloadState extends KeyedProcessFunction<Long, Long, Long>
            implements CheckpointedFunction {
        private static final long serialVersionUID = 1L;
        private final int valueBytes;
        private final boolean failOnRestore;
        private transient ValueState<byte[]> payload;
        private transient SplittableRandom random;

        PayloadState(int valueBytes, boolean failOnRestore) {
            this.valueBytes = valueBytes;
            this.failOnRestore = failOnRestore;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {
            if (failOnRestore && context.isRestored()) {
                throw new IllegalStateException(
                        "sample job started with --fail-on-restore and this start restores state"
                                + " (from a checkpoint or savepoint): failing on purpose");
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            // Keyed state is snapshotted by the backend; nothing operator-scoped to add.
        }

        @Override
        public void open(OpenContext openContext) {
            payload = getRuntimeContext().getState(
                    new ValueStateDescriptor<>("payload", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
            random = new SplittableRandom(getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            byte[] bytes = new byte[valueBytes];
            random.nextBytes(bytes);
            payload.update(bytes);
            out.collect(value);
        }
    }
}

package io.github.flinkmaint.sandbox.job;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

import java.util.SplittableRandom;

/**
 * Flink 2.x only (built by sample-job-flink2, never by the 1.20 module): the keyed payload
 * operator on the asynchronous state API, the way ForSt keeps its working state on the DFS
 * (state.backend.forst.primary-dir) while the job runs. Same state name ("payload") and value
 * type as {@link StatefulSampleJob.PayloadState}. StatefulSampleJob reaches it by reflection.
 */
public final class AsyncPayloadState extends KeyedProcessFunction<Long, Long, Long> {
    private static final long serialVersionUID = 1L;
    private final int valueBytes;
    private transient ValueState<byte[]> payload;
    private transient SplittableRandom random;

    AsyncPayloadState(int valueBytes) {
        this.valueBytes = valueBytes;
    }

    /** keyed.enableAsyncState().process(new AsyncPayloadState(valueBytes)). */
    public static SingleOutputStreamOperator<Long> apply(KeyedStream<Long, Long> keyed, int valueBytes) {
        return keyed.enableAsyncState().process(new AsyncPayloadState(valueBytes));
    }

    @Override
    public void open(OpenContext openContext) {
        payload = getRuntimeContext().getState(
                new ValueStateDescriptor<>("payload", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        random = new SplittableRandom(getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
    }

    @Override
    public void processElement(Long value, Context ctx, Collector<Long> out) {
        byte[] bytes = new byte[valueBytes];
        random.nextBytes(bytes);
        payload.asyncUpdate(bytes).thenAccept(ignored -> out.collect(value));
    }
}

package io.github.flinkmaint.sandbox.peers;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;

/**
 * Loads checkpoint _metadata files with Flink's own loader
 * (Checkpoints.loadCheckpointMetadata) and prints the throughput, for a side-by-side
 * comparison with flinkmaint's Go reader over the same files.
 *
 * <p>Usage: MetadataLoadBench [--runs=N] ITERATIONS PATH... (each PATH a _metadata file):
 * N timed runs (default 5) of ITERATIONS passes each, printed as their median and spread. Files
 * are read into memory first, so only parsing is timed.
 */
public final class MetadataLoadBench {
    public static void main(String[] args) throws Exception {
        int runs = 5;
        int first = 0;
        if (args.length > 0 && args[0].startsWith("--runs=")) {
            runs = Integer.parseInt(args[0].substring("--runs=".length()));
            first = 1;
        }
        if (args.length - first < 2 || runs < 1) {
            System.err.println("usage: MetadataLoadBench [--runs=N] ITERATIONS PATH...");
            System.exit(2);
        }
        int iterations = Integer.parseInt(args[first]);
        List<byte[]> files = new ArrayList<>();
        List<String> names = new ArrayList<>();
        long bytes = 0;
        for (int i = first + 1; i < args.length; i++) {
            byte[] data = Files.readAllBytes(Path.of(args[i]));
            files.add(data);
            names.add(args[i]);
            bytes += data.length;
        }
        ClassLoader cl = MetadataLoadBench.class.getClassLoader();
        // Warm up the JIT the way a long-running service would be.
        int warmup = Math.max(1, iterations / 5);
        for (int w = 0; w < warmup; w++) {
            load(files, names, cl);
        }
        double[] mbps = new double[runs];
        double[] seconds = new double[runs];
        long operators = 0;
        for (int r = 0; r < runs; r++) {
            long start = System.nanoTime();
            operators = 0;
            for (int it = 0; it < iterations; it++) {
                operators += load(files, names, cl);
            }
            seconds[r] = (System.nanoTime() - start) / 1e9;
            mbps[r] = (double) bytes * iterations / 1e6 / seconds[r];
        }
        double[] sorted = mbps.clone();
        Arrays.sort(sorted);
        double median = runs % 2 == 1 ? sorted[runs / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2;
        System.out.printf(
                "java Checkpoints.loadCheckpointMetadata: %d files, %d bytes, %d iterations a run, %d runs; median %.1f MB/s (%.1f-%.1f), %.0f metadata/s, %d operators%n",
                files.size(), bytes, iterations, runs, median, sorted[0], sorted[runs - 1],
                median * 1e6 / bytes * files.size(), operators / iterations);
        System.out.printf("JAVA_MEDIAN_MBPS=%.3f%n", median);
    }

    private static long load(List<byte[]> files, List<String> names, ClassLoader cl) throws Exception {
        long operators = 0;
        for (int i = 0; i < files.size(); i++) {
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(files.get(i)))) {
                CheckpointMetadata md = Checkpoints.loadCheckpointMetadata(in, cl, names.get(i));
                operators += md.getOperatorStates().size();
            }
        }
        return operators;
    }
}

package io.github.flinkmaint.sandbox.peers;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;

/**
 * Loads checkpoint _metadata files with Flink's own loader
 * (Checkpoints.loadCheckpointMetadata) and prints the throughput, for a side-by-side
 * comparison with flinkmaint's Go reader over the same files.
 *
 * <p>Usage: MetadataLoadBench ITERATIONS PATH... (each PATH a _metadata file). Files are read
 * into memory first, so only parsing is timed.
 */
public final class MetadataLoadBench {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: MetadataLoadBench ITERATIONS PATH...");
            System.exit(2);
        }
        int iterations = Integer.parseInt(args[0]);
        List<byte[]> files = new ArrayList<>();
        List<String> names = new ArrayList<>();
        long bytes = 0;
        for (int i = 1; i < args.length; i++) {
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
        long start = System.nanoTime();
        long operators = 0;
        for (int it = 0; it < iterations; it++) {
            operators += load(files, names, cl);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double mb = (double) bytes * iterations / 1e6;
        System.out.printf(
                "java Checkpoints.loadCheckpointMetadata: %d files, %d bytes, %d iterations, %.3f s, %.1f MB/s, %.0f metadata/s, %d operators%n",
                files.size(), bytes, iterations, seconds, mb / seconds, files.size() * iterations / seconds, operators / iterations);
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

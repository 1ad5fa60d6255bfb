// Command bench times the _metadata reader over files given on the command
// line and prints MB/s and referenced files/s, the figures `make
// bench-metadata` sets beside Flink's own Java loader on the same files:
// the median and spread of -runs timed runs of -iterations passes each,
// and the heap a parse allocates and keeps, against the files' size.
// Files are read into memory first, so only parsing is timed.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/benchstat"
)

type file struct {
	path string
	data []byte
}

func main() {
	iterations := flag.Int("iterations", 20, "passes over all files per timed run")
	runs := flag.Int("runs", 5, "timed runs; the median and spread are printed")
	flag.Parse()
	if flag.NArg() == 0 || *iterations < 1 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: bench [-iterations N] [-runs N] PATH/_metadata...")
		os.Exit(2)
	}
	var files []file
	var bytes int64
	for _, p := range flag.Args() {
		data, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		files = append(files, file{p, data})
		bytes += int64(len(data))
	}
	for w := 0; w < max(1, *iterations/5); w++ {
		parseAll(files)
	}
	var took benchstat.Durations
	var mbps []float64
	refs := 0
	for r := 0; r < *runs; r++ {
		start := time.Now()
		refs = 0
		for i := 0; i < *iterations; i++ {
			for _, md := range parseAll(files) {
				refs += md.NumReferences()
			}
		}
		d := time.Since(start)
		took = append(took, d)
		mbps = append(mbps, float64(bytes)*float64(*iterations)/1e6/d.Seconds())
	}
	distinct := 0
	for _, md := range parseAll(files) {
		distinct += len(md.Files)
	}
	slices.Sort(mbps)
	median := took.Median().Seconds()
	fmt.Printf("go checkpoint.ParseBytes: %d files, %d bytes, %d iterations a run, %s a run; median %.1f MB/s (%.1f–%.1f), %.0f metadata/s, %.0f file references/s (%d distinct files a pass)\n",
		len(files), bytes, *iterations, took, float64(bytes)*float64(*iterations)/1e6/median, mbps[0], mbps[len(mbps)-1],
		float64(len(files)**iterations)/median, float64(refs)/median, distinct)
	allocated, kept := heapOfOneParse(files)
	fmt.Printf("go heap of one parse of all files: %.1f MB allocated (%.2fx the files, the most it could hold without a collection), %.1f MB kept in the results (%.2fx)\n",
		float64(allocated)/1e6, float64(allocated)/float64(bytes), float64(kept)/1e6, float64(kept)/float64(bytes))
	peak := peakHeapOfOneParse(files)
	fmt.Printf("go peak heap of one parse of all files: %.1f MB (%.2fx the files; live and not yet swept objects, the collector at GOGC=1, sampled every 50 µs)\n",
		float64(peak)/1e6, float64(peak)/float64(bytes))
	fmt.Printf("GO_MEDIAN_MBPS=%.3f\n", float64(bytes)*float64(*iterations)/1e6/median)
}

func parseAll(files []file) []*checkpoint.Metadata {
	out := make([]*checkpoint.Metadata, 0, len(files))
	for _, f := range files {
		md, err := checkpoint.ParseBytes(f.data, f.path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", f.path, err)
			os.Exit(1)
		}
		out = append(out, md)
	}
	return out
}

// heapOfOneParse is what one pass allocates with the collector off (the
// most it could hold at once) and what its results keep once collected.
func heapOfOneParse(files []file) (allocated, kept uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	old := debug.SetGCPercent(-1)
	runtime.ReadMemStats(&before)
	results := parseAll(files)
	runtime.ReadMemStats(&after)
	debug.SetGCPercent(old)
	allocated = after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		kept = after.HeapAlloc - before.HeapAlloc
	}
	runtime.KeepAlive(results)
	return allocated, kept
}

// peakHeapOfOneParse is the most heap one pass held at once: with the
// collector running whenever the heap grows 1% past what was live, the
// heap's objects are sampled while the pass runs and the largest sample,
// less what was there before, is returned. Garbage the collector has not
// swept yet counts, so this is a little above the live peak.
func peakHeapOfOneParse(files []file) uint64 {
	runtime.GC()
	old := debug.SetGCPercent(1)
	defer debug.SetGCPercent(old)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
	}()
	results := parseAll(files)
	close(done)
	wg.Wait()
	peak = max(peak, read())
	runtime.KeepAlive(results)
	if peak < base {
		return 0
	}
	return peak - base
}

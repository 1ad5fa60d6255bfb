// Command bench walks a synthetic tree of 100k+ files on the sandbox HDFS
// with the storage port and, in the same run, times `hdfs dfs -ls -R` and
// `hdfs dfs -count` on the same tree, printing files/s and namenode RPCs per
// 1000 entries.
//
//	go run ./internal/storage/bench [-files 100000] [-per-dir 1000] [-workers 6]
//
// The tree is kept under a fixed path (/flinkmaint-bench/storage/tree-<files>)
// so later runs only measure; -recreate builds it again.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/benchstat"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

const benchRoot = "/flinkmaint-bench/storage"

func main() {
	files := flag.Int("files", 100_000, "files in the tree")
	perDir := flag.Int("per-dir", 1000, "files per directory")
	workers := flag.Int("workers", 6, "parallel HDFS clients used to create the tree")
	recreate := flag.Bool("recreate", false, "delete and recreate the tree")
	runs := flag.Int("runs", 5, "times each method is measured (median and spread printed)")
	flag.Parse()
	if err := run(*files, *perDir, *workers, *runs, *recreate); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(files, perDir, workers, runs int, recreate bool) error {
	if files < 1 || perDir < 1 || workers < 1 || runs < 1 {
		return fmt.Errorf("-files %d, -per-dir %d, -workers %d, -runs %d: all must be >= 1", files, perDir, workers, runs)
	}
	ctx := context.Background()
	peers, err := sandbox.LoadPeers()
	if err != nil {
		return err
	}
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", benchRoot); err != nil {
		return err
	}
	guard, err := storage.NewGuard(benchRoot)
	if err != nil {
		return err
	}
	open := func() (*storage.HDFS, error) {
		return storage.NewHDFS(ctx, storage.HDFSOptions{URI: peers.HDFS.URI, User: peers.HDFS.User, HadoopConfDir: os.TempDir() + "/flinkmaint-bench-no-conf", Guard: guard})
	}
	fs, err := open()
	if err != nil {
		return err
	}
	defer fs.Close()
	tree := fmt.Sprintf("%s/tree-%d", benchRoot, files)
	dirs := (files + perDir - 1) / perDir

	if recreate {
		if err := fs.RemoveAll(ctx, tree); err != nil {
			return err
		}
	}
	cs, err := fs.ContentSummary(ctx, tree)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if err != nil || cs.Files != int64(files) || cs.Dirs != int64(dirs+1) {
		fmt.Printf("creating %d files in %d dirs under %s with %d clients...\n", files, dirs, tree, workers)
		start := time.Now()
		if err := create(ctx, open, tree, files, perDir, workers); err != nil {
			return err
		}
		fmt.Printf("created in %v (%.0f files/s)\n", time.Since(start).Round(time.Millisecond), float64(files)/time.Since(start).Seconds())
	}

	shell := func(args ...string) (time.Duration, string, error) {
		start := time.Now()
		out, err := peers.HadoopShell(ctx, args...)
		return time.Since(start), out, err
	}
	walk := func() (time.Duration, uint64, int64, error) {
		var entries int64
		r0 := fs.RPCs()
		start := time.Now()
		err := fs.Walk(ctx, tree, func(storage.FileInfo) error { entries++; return nil })
		return time.Since(start), fs.RPCs() - r0, entries, err
	}
	// A first walk warms the namenode's caches; it is not counted.
	if _, _, _, err := walk(); err != nil {
		return err
	}
	var walks, summaries, jvms, lists, counts benchstat.Durations
	var entries, lsLines int64
	var rpcs, csRPCs uint64
	var countOut string
	for i := 0; i < runs; i++ {
		d, r, n, err := walk()
		if err != nil {
			return err
		}
		walks, rpcs, entries = append(walks, d), r, n
		r0 := fs.RPCs()
		start := time.Now()
		if cs, err = fs.ContentSummary(ctx, tree); err != nil {
			return err
		}
		summaries, csRPCs = append(summaries, time.Since(start)), fs.RPCs()-r0
		jvm, _, err := shell("-ls", benchRoot)
		if err != nil {
			return err
		}
		ls, out, err := shell("-ls", "-R", tree)
		if err != nil {
			return err
		}
		lsLines = int64(strings.Count(out, "\n"))
		count, out, err := shell("-count", tree)
		if err != nil {
			return err
		}
		jvms, lists, counts, countOut = append(jvms, jvm), append(lists, ls), append(counts, count), out
		fmt.Printf("run %d/%d: walk %v, hdfs dfs -ls -R %v\n", i+1, runs, d.Round(time.Millisecond), ls.Round(time.Millisecond))
	}
	var listsNoJVM benchstat.Durations
	for i := range lists {
		listsNoJVM = append(listsNoJVM, lists[i]-jvms[i])
	}
	rate := func(n int64, d benchstat.Durations) float64 { return float64(n) / d.Median().Seconds() }

	fmt.Printf("\ntree %s: %d files, %d dirs (namenode content summary); median (fastest-slowest) of %d runs\n", tree, cs.Files, cs.Dirs, runs)
	fmt.Printf("%-34s %9s %34s %14s %s\n", "method", "entries", "wall", "entries/s", "namenode RPCs per 1000 entries")
	fmt.Printf("%-34s %9d %34v %14.0f %.2f (%d RPCs)\n", "storage.HDFS.Walk (batch 1000)", entries, walks, rate(entries, walks), 1000*float64(rpcs)/float64(entries), rpcs)
	fmt.Printf("%-34s %9d %34v %14.0f %.3f (%d RPC)\n", "storage.HDFS.ContentSummary", cs.Files+cs.Dirs, summaries, rate(cs.Files+cs.Dirs, summaries), 1000*float64(csRPCs)/float64(cs.Files+cs.Dirs), csRPCs)
	fmt.Printf("%-34s %9d %34v %14.0f %s\n", "hdfs dfs -ls -R (new JVM)", lsLines, lists, rate(lsLines, lists), "not measured (other process)")
	fmt.Printf("%-34s %9d %34v %14.0f %s\n", "hdfs dfs -ls -R minus JVM start", lsLines, listsNoJVM, rate(lsLines, listsNoJVM), "")
	fmt.Printf("%-34s %9s %34v %14s %s\n", "hdfs dfs -count (new JVM)", strings.Fields(countOut)[1], counts, "", "")
	fmt.Printf("%-34s %9s %34v\n", "JVM start + hdfs dfs -ls (1 dir)", "", jvms)
	fmt.Printf("\nwalk vs hdfs dfs -ls -R, medians: %.1fx (%.1fx without the JVM start)\n",
		lists.Median().Seconds()/walks.Median().Seconds(), listsNoJVM.Median().Seconds()/walks.Median().Seconds())
	return nil
}

// create writes the tree with several clients in parallel: one namenode
// connection serves one RPC at a time, so parallel clients are what makes
// 100k creates take a minute instead of many.
func create(ctx context.Context, open func() (*storage.HDFS, error), tree string, files, perDir, workers int) error {
	fs, err := open()
	if err != nil {
		return err
	}
	defer fs.Close()
	if err := fs.Mkdir(ctx, tree); err != nil && !errors.Is(err, storage.ErrExist) {
		return err
	}
	dirs := (files + perDir - 1) / perDir
	for d := 0; d < dirs; d++ {
		if err := fs.Mkdir(ctx, fmt.Sprintf("%s/d%04d", tree, d)); err != nil && !errors.Is(err, storage.ErrExist) {
			return err
		}
	}
	var next atomic.Int64
	var done atomic.Int64
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := open()
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for {
				i := int(next.Add(1) - 1)
				if i >= files {
					return
				}
				p := fmt.Sprintf("%s/d%04d/f%07d", tree, i/perDir, i)
				if err := c.WriteFile(ctx, p, nil); err != nil && !errors.Is(err, storage.ErrExist) {
					errs <- err
					return
				}
				if n := done.Add(1); n%20000 == 0 {
					fmt.Printf("  %d files\n", n)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

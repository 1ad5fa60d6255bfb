// Command bench times the _metadata reader over files given on the command
// line and prints MB/s and referenced files/s, the figures `make
// bench-metadata` sets beside Flink's own Java loader on the same files.
// Files are read into memory first, so only parsing is timed.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
)

func main() {
	iterations := flag.Int("iterations", 20, "passes over all files")
	flag.Parse()
	if flag.NArg() == 0 || *iterations < 1 {
		fmt.Fprintln(os.Stderr, "usage: bench [-iterations N] PATH/_metadata...")
		os.Exit(2)
	}
	type file struct {
		path string
		data []byte
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
	parse := func() int {
		refs := 0
		for _, f := range files {
			md, err := checkpoint.ParseBytes(f.data, f.path)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", f.path, err)
				os.Exit(1)
			}
			refs += len(md.Files)
		}
		return refs
	}
	for w := 0; w < max(1, *iterations/5); w++ {
		parse()
	}
	start := time.Now()
	refs := 0
	for i := 0; i < *iterations; i++ {
		refs += parse()
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("go checkpoint.ParseBytes: %d files, %d bytes, %d iterations, %.3f s, %.1f MB/s, %.0f metadata/s, %.0f referenced files/s\n",
		len(files), bytes, *iterations, secs, float64(bytes)*float64(*iterations)/1e6/secs,
		float64(len(files)**iterations)/secs, float64(refs)/secs)
}

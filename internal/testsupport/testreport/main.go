// Command testreport reads `go test -json` on stdin and prints what a person
// reading the end of a long test run needs: each package's result as plain
// `go test` prints it, the whole output of every failing test, and at the
// end a summary — how many tests ran, which failed (with their assertion
// lines), the slowest tests and each package's time. The exit status is
// go test's to give; this command fails only on unreadable input.
//
//	go test -json ./... | go run ./internal/testsupport/testreport -slowest 15
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type testKey struct{ pkg, test string }

type result struct {
	key     testKey
	action  string // pass, fail, skip
	elapsed time.Duration
}

type report struct {
	out      io.Writer
	outputs  map[testKey][]string // output of tests still running (and of packages)
	results  []result
	packages []result
	failed   map[testKey][]string // the assertion lines of failed tests
	order    []testKey            // failed tests in the order they failed
	// Tests whose package ended before they did: a test binary killed by
	// its timeout or a panic.
	unfinished []testKey
}

// assertion matches the lines testing.T prints for t.Error, t.Fatal and
// t.Log: an indented "file_test.go:123: ".
var assertion = regexp.MustCompile(`^\s+\S+_test\.go:\d+: `)

func main() {
	slowest := flag.Int("slowest", 15, "how many of the slowest tests to list")
	flag.Parse()
	r := &report{out: os.Stdout, outputs: map[testKey][]string{}, failed: map[testKey][]string{}}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r.summary(*slowest)
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: what go test printed itself (a build error).
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	key := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		r.outputs[key] = append(r.outputs[key], e.Output)
	case "pass", "skip", "fail":
		elapsed := time.Duration(e.Elapsed * float64(time.Second))
		lines := r.outputs[key]
		delete(r.outputs, key)
		if e.Test == "" {
			r.packages = append(r.packages, result{key, e.Action, elapsed})
			r.endPackage(e.Package)
			if e.Action == "fail" {
				// Output outside any test: a panic, a build error, TestMain.
				r.print(lines, func(l string) bool { return !strings.HasPrefix(l, "FAIL\t") && !strings.HasPrefix(l, "ok  \t") })
			}
			r.printPackage(e, elapsed)
			return
		}
		r.results = append(r.results, result{key, e.Action, elapsed})
		if e.Action == "fail" {
			r.print(lines, nil)
			var asserts []string
			for _, l := range lines {
				if assertion.MatchString(l) {
					asserts = append(asserts, strings.TrimRight(l, "\n"))
				}
			}
			r.failed[key] = asserts
			r.order = append(r.order, key)
		}
	}
}

// endPackage prints the output of the package's tests that never ended.
func (r *report) endPackage(pkg string) {
	var open []testKey
	for key := range r.outputs {
		if key.pkg == pkg && key.test != "" {
			open = append(open, key)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].test < open[j].test })
	for _, key := range open {
		fmt.Fprintf(r.out, "--- NOT FINISHED: %s\n", key.test)
		r.print(r.outputs[key], nil)
		delete(r.outputs, key)
	}
	r.unfinished = append(r.unfinished, open...)
}

func (r *report) print(lines []string, keep func(string) bool) {
	for _, l := range lines {
		if keep == nil || keep(l) {
			fmt.Fprint(r.out, l)
		}
	}
}

func (r *report) printPackage(e event, elapsed time.Duration) {
	switch e.Action {
	case "pass":
		fmt.Fprintf(r.out, "ok  \t%s\t%.3fs\n", e.Package, elapsed.Seconds())
	case "skip":
		fmt.Fprintf(r.out, "?   \t%s\t[no test files]\n", e.Package)
	default:
		fmt.Fprintf(r.out, "FAIL\t%s\t%.3fs\n", e.Package, elapsed.Seconds())
	}
}

func (r *report) summary(slowest int) {
	counts := map[string]int{}
	var top []result
	for _, res := range r.results {
		counts[res.action]++
		if !strings.Contains(res.key.test, "/") {
			top = append(top, res)
		}
	}
	w := r.out
	fmt.Fprintln(w)
	fmt.Fprintln(w, "==== summary ====")
	fmt.Fprintf(w, "tests: %d ran: %d passed, %d skipped, %d failed (subtests included)\n",
		len(r.results), counts["pass"], counts["skip"], counts["fail"])

	sort.SliceStable(top, func(i, j int) bool { return top[i].elapsed > top[j].elapsed })
	if len(top) > slowest {
		top = top[:slowest]
	}
	fmt.Fprintf(w, "\nslowest %d tests:\n", len(top))
	for _, res := range top {
		fmt.Fprintf(w, "  %7.1fs  %s  %s\n", res.elapsed.Seconds(), short(res.key.pkg), res.key.test)
	}

	pkgs := append([]result(nil), r.packages...)
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].elapsed > pkgs[j].elapsed })
	fmt.Fprintln(w, "\npackages by time:")
	for _, res := range pkgs {
		if res.action == "skip" {
			continue
		}
		fmt.Fprintf(w, "  %7.1fs  %-4s %s\n", res.elapsed.Seconds(), res.action, short(res.key.pkg))
	}

	// Tests of a package that never ended (go test itself was killed).
	unfinished := r.unfinished
	for key := range r.outputs {
		if key.test != "" {
			unfinished = append(unfinished, key)
		}
	}

	if len(r.order) == 0 && len(unfinished) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfailed:")
	for _, key := range r.order {
		fmt.Fprintf(w, "  --- FAIL: %s  %s\n", short(key.pkg), key.test)
		asserts := r.failed[key]
		const most = 20
		if len(asserts) > most {
			fmt.Fprintf(w, "        (%d of %d lines; the whole output is above)\n", most, len(asserts))
			asserts = asserts[len(asserts)-most:]
		}
		for _, l := range asserts {
			fmt.Fprintf(w, "      %s\n", strings.TrimSpace(l))
		}
	}
	for _, key := range unfinished {
		fmt.Fprintf(w, "  --- NOT FINISHED: %s  %s\n", short(key.pkg), key.test)
	}
}

// short drops the module path so the tables stay narrow.
func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/flinkmaint/flinkmaint/")
}

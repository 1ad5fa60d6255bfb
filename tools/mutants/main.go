// Command mutants reads the results gremlins wrote for each package of
// `make mutate`, prints the mutation score and every surviving mutant,
// and fails when a survivor is not in the reviewed list of accepted ones.
//
// A survivor is named by its file, enclosing function, mutation type, the
// place of the mutated operator in the line and the line (trimmed), so
// the list survives edits elsewhere in the file. The list has one entry
// per survivor, each followed by an indented line saying why it is
// accepted:
//
//	internal/cleanup/executor.go loop CONDITIONALS_BOUNDARY @6 if n > limit {
//		why: limit is never reached with the sizes the planner makes
//
// Usage: mutants -accepted FILE [-root DIR] PKGDIR=RESULTS.json ...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// result is the part of gremlins' -o output read here.
type result struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

type survivor struct {
	path      string
	line, col int
	fn        string // the enclosing function, "-" outside one
	typ, code string
	at        int // where in code (trimmed) the mutated operator is, from 1
}

func (s survivor) key() string {
	return fmt.Sprintf("%s %s %s @%d %s", s.path, s.fn, s.typ, s.at, s.code)
}

// enclosing names the function whose body holds line n (1-based) of lines:
// the nearest "func" line above it.
func enclosing(lines []string, n int) string {
	for i := n - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.HasPrefix(l, "func ") {
			continue
		}
		l = strings.TrimPrefix(l, "func ")
		if strings.HasPrefix(l, "(") { // a method: skip the receiver
			if j := strings.Index(l, ")"); j >= 0 {
				l = strings.TrimSpace(l[j+1:])
			}
		}
		if j := strings.IndexAny(l, "([ "); j > 0 {
			return l[:j]
		}
		return l
	}
	return "-"
}

func main() {
	acceptedFile := flag.String("accepted", "", "the reviewed list of accepted survivors")
	root := flag.String("root", ".", "the module root the package dirs are relative to")
	flag.Parse()
	if *acceptedFile == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mutants -accepted FILE [-root DIR] PKGDIR=RESULTS.json ...")
		os.Exit(2)
	}
	if err := run(*acceptedFile, *root, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func run(acceptedFile, root string, args []string) error {
	accepted, err := readAccepted(acceptedFile)
	if err != nil {
		return err
	}
	var all []survivor
	total := map[string]int{}
	covered := map[string]bool{} // the files this run mutated
	for _, arg := range args {
		dir, file, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("argument %q: want PKGDIR=RESULTS.json", arg)
		}
		counts, survivors, files, err := readResults(root, dir, file)
		if err != nil {
			return err
		}
		for _, f := range files {
			covered[f] = true
		}
		fmt.Printf("%-22s %s\n", dir, describe(counts))
		for k, v := range counts {
			total[k] += v
		}
		all = append(all, survivors...)
	}
	fmt.Printf("%-22s %s\n", "total", describe(total))

	sort.Slice(all, func(i, j int) bool {
		if all[i].path != all[j].path {
			return all[i].path < all[j].path
		}
		return all[i].line < all[j].line || all[i].line == all[j].line && all[i].col < all[j].col
	})
	seen := map[string]bool{}
	var fresh int
	if len(all) > 0 {
		fmt.Println("\nsurviving mutants:")
	}
	for _, s := range all {
		seen[s.key()] = true
		mark := "NEW: kill it with a test, or review it into " + acceptedFile
		if why, ok := accepted[s.key()]; ok {
			mark = "accepted: " + why
		} else {
			fresh++
		}
		fmt.Printf("  %s:%d:%d\n      %s\n      %s\n", s.path, s.line, s.col, s.key(), mark)
	}
	// An accepted entry of a file this run did not mutate (the default
	// scope of a wide-scope entry) says nothing.
	var stale []string
	for k := range accepted {
		if file, _, _ := strings.Cut(k, " "); !seen[k] && covered[file] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		fmt.Printf("no longer survives (remove it from %s): %s\n", acceptedFile, k)
	}
	if fresh > 0 {
		return fmt.Errorf("%d new surviving mutants", fresh)
	}
	return nil
}

func describe(c map[string]int) string {
	killed, lived := c["KILLED"], c["LIVED"]
	score := "n/a"
	if killed+lived > 0 {
		score = fmt.Sprintf("%.1f%%", 100*float64(killed)/float64(killed+lived))
	}
	return fmt.Sprintf("score %s: %d killed, %d lived, %d timed out, %d not viable, %d not covered",
		score, killed, lived, c["TIMED OUT"], c["NOT VIABLE"], c["NOT COVERED"])
}

func readResults(root, dir, file string) (map[string]int, []survivor, []string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, nil, err
	}
	var res result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	counts := map[string]int{}
	var survivors []survivor
	var covered []string
	for _, f := range res.Files {
		path := filepath.ToSlash(filepath.Join(dir, f.Name))
		covered = append(covered, path)
		var lines []string
		for _, m := range f.Mutations {
			counts[m.Status]++
			if m.Status != "LIVED" {
				continue
			}
			if lines == nil {
				src, err := os.ReadFile(filepath.Join(root, path))
				if err != nil {
					return nil, nil, nil, err
				}
				lines = strings.Split(string(src), "\n")
			}
			if m.Line < 1 || m.Line > len(lines) {
				return nil, nil, nil, fmt.Errorf("%s: survivor at line %d of a %d-line file", path, m.Line, len(lines))
			}
			src := lines[m.Line-1]
			indent := len(src) - len(strings.TrimLeft(src, " \t"))
			survivors = append(survivors, survivor{path: path, line: m.Line, col: m.Column, fn: enclosing(lines, m.Line),
				typ: m.Type, code: strings.TrimSpace(src), at: m.Column - indent})
		}
	}
	return counts, survivors, covered, nil
}

// readAccepted reads the reviewed list: each entry's key line followed by
// an indented "why:" line.
func readAccepted(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	accepted := map[string]string{}
	var last string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			why, ok := strings.CutPrefix(strings.TrimSpace(line), "why:")
			if !ok || last == "" || strings.TrimSpace(why) == "" {
				return nil, fmt.Errorf("%s:%d: want an indented \"why: REASON\" line right after an entry", file, n)
			}
			accepted[last] = strings.TrimSpace(why)
			last = ""
		default:
			if last != "" {
				return nil, fmt.Errorf("%s:%d: the entry before this line says not why it is accepted", file, n-1)
			}
			if _, dup := accepted[line]; dup {
				return nil, fmt.Errorf("%s:%d: %q listed twice", file, n, line)
			}
			last = strings.TrimSpace(line)
			accepted[last] = ""
		}
	}
	if last != "" {
		return nil, errors.New(file + ": the last entry says not why it is accepted")
	}
	return accepted, sc.Err()
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestReportNamesFailuresSlowestAndUnfinished(t *testing.T) {
	const mod = "github.com/flinkmaint/flinkmaint/"
	in := strings.Join([]string{
		`{"Action":"run","Package":"` + mod + `a","Test":"TestFast"}`,
		`{"Action":"output","Package":"` + mod + `a","Test":"TestFast","Output":"quiet\n"}`,
		`{"Action":"pass","Package":"` + mod + `a","Test":"TestFast","Elapsed":0.5}`,
		`{"Action":"run","Package":"` + mod + `a","Test":"TestSlow"}`,
		`{"Action":"output","Package":"` + mod + `a","Test":"TestSlow","Output":"2026/12/04 DEBUG noise\n"}`,
		`{"Action":"output","Package":"` + mod + `a","Test":"TestSlow","Output":"    slow_test.go:42: precondition: not within 5m\n"}`,
		`{"Action":"fail","Package":"` + mod + `a","Test":"TestSlow","Elapsed":90}`,
		`{"Action":"fail","Package":"` + mod + `a","Elapsed":91}`,
		`{"Action":"run","Package":"` + mod + `b","Test":"TestHangs"}`,
		`{"Action":"output","Package":"` + mod + `b","Test":"TestHangs","Output":"panic: test timed out\n"}`,
		`{"Action":"fail","Package":"` + mod + `b","Elapsed":600}`,
		`# a build error`,
	}, "\n")
	var out bytes.Buffer
	r := &report{out: &out, outputs: map[testKey][]string{}, failed: map[testKey][]string{}}
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	r.summary(1)
	got := out.String()
	for _, want := range []string{
		"2026/12/04 DEBUG noise", // a failing test's whole output
		"FAIL\t" + mod + "a\t91.000s",
		"# a build error",
		"tests: 2 ran: 1 passed, 0 skipped, 1 failed",
		"slowest 1 tests:\n     90.0s  a  TestSlow\n",
		"    600.0s  fail b\n",
		"--- FAIL: a  TestSlow\n      slow_test.go:42: precondition: not within 5m\n",
		"--- NOT FINISHED: b  TestHangs",
		"panic: test timed out",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet") {
		t.Errorf("a passing test's output is printed:\n%s", got)
	}
}

package app_test

import (
	"bufio"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/internal/app"
)

// nameRecorder registers activities as the SDK does, by the exported
// methods of each value, and remembers which value registered each name.
type nameRecorder struct {
	by map[string][]string // activity name -> types that register it
}

func (r *nameRecorder) RegisterActivity(a interface{}) {
	t := reflect.TypeOf(a)
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		r.by[m.Name] = append(r.by[m.Name], t.String())
	}
}

// TestRegisteredActivityNames holds the activities every family registers
// to the list in testdata: activity names are recorded in workflow
// history, so a worker must keep answering to every name an earlier
// release scheduled, and two families must not claim one name.
func TestRegisteredActivityNames(t *testing.T) {
	rec := &nameRecorder{by: map[string][]string{}}
	app.RegisterActivities(rec, &app.Ports{})
	var got []string
	for name, types := range rec.by {
		got = append(got, name)
		if len(types) > 1 {
			t.Errorf("activity %s is registered by %s: one family each", name, strings.Join(types, " and "))
		}
	}
	slices.Sort(got)
	want := readNames(t, "testdata/activity-names.txt")
	for _, n := range want {
		if _, ok := rec.by[n]; !ok {
			t.Errorf("activity %s is no longer registered: a run that scheduled it could not go on", n)
		}
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			t.Errorf("activity %s (%s) is not in testdata/activity-names.txt: add it there, it is public API from now on", n, rec.by[n][0])
		}
	}

	// The SDK's own registry refuses a name registered twice.
	var s testsuite.WorkflowTestSuite
	app.RegisterActivities(s.NewTestActivityEnvironment(), &app.Ports{})
}

func readNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			names = append(names, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

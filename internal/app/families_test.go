package app_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

type quietNotifier struct{}

func (quietNotifier) Send(context.Context, notify.Event) []notify.Outcome { return nil }
func (quietNotifier) Probe(context.Context) []notify.Outcome              { return nil }
func (quietNotifier) UILink(string, string) string                        { return "" }

// TestNewFamiliesHandsOnEveryPort sets every port and setting and checks
// each family holds, in every field, what the ports hold under that name:
// a family field NewFamilies forgets would be nil on a real worker.
func TestNewFamiliesHandsOnEveryPort(t *testing.T) {
	gov, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p := &app.Ports{
		Identity: "w", Now: time.Now, PollInterval: time.Second, OperationPollMin: time.Millisecond,
		FailoverWait: time.Minute, LiveReadWait: time.Hour,
		Inventory: app.StaticInventory{Path: "/inv.yaml"}, Flink: &app.FlinkClients{}, Storage: &storage.Resolver{},
		Kubernetes: app.KubeHealth{}, Cleanup: core.CleanupSettings{TrashRoot: "/trash"}, Drill: core.DrillSettings{Root: "/drills"},
		Metrics: gov, Operator: app.KubeOperator{}, Orphans: app.KubeOrphans{}, ReadOnlyKubeClusters: map[string]bool{"": true},
		Runs: app.TemporalRuns{}, Notifier: quietNotifier{}, Freezes: &freeze.Calendar{}, KubeAccess: app.KubeAccess{},
		Worker: doctor.WorkerInfo{Version: "v"},
	}
	ports := reflect.ValueOf(p).Elem()
	for i := 0; i < ports.NumField(); i++ {
		if ports.Field(i).IsZero() {
			t.Fatalf("the test leaves Ports.%s unset", ports.Type().Field(i).Name)
		}
	}
	fams := reflect.ValueOf(app.NewFamilies(p))
	for i := 0; i < fams.NumField(); i++ {
		fam := fams.Field(i).Elem()
		for j := 0; j < fam.NumField(); j++ {
			name := fam.Type().Field(j).Name
			got, want := fam.Field(j), ports.FieldByName(name)
			switch {
			case !want.IsValid():
				t.Errorf("%s.%s is no port: add it to Ports", fam.Type(), name)
			case got.Kind() == reflect.Func:
				if got.Pointer() != want.Pointer() {
					t.Errorf("%s.%s is not Ports.%s", fam.Type(), name, name)
				}
			case !reflect.DeepEqual(got.Interface(), want.Interface()):
				t.Errorf("%s.%s = %v, want Ports.%s (%v)", fam.Type(), name, got, name, want)
			}
		}
	}
}

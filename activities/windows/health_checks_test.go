package windows

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// metricsClient is a job whose metrics Flink reports as given: job metrics
// by id, vertex metrics by vertex id then metric id.
type metricsClient struct {
	core.FlinkAPI // other calls panic: the test notices them
	vertices      []flink.JobVertex
	job           map[string]string
	// later holds job metric values Flink reports in turn once job's value
	// has been read, as a counter that goes on counting.
	later  map[string][]string
	vertex map[string]map[string]float64
	mu     sync.Mutex
	asked  int
}

func (c *metricsClient) JobDetails(context.Context, string) (flink.JobDetails, error) {
	return flink.JobDetails{Vertices: c.vertices}, nil
}

func (c *metricsClient) JobMetrics(_ context.Context, _ string, names ...string) ([]flink.MetricValue, error) {
	c.mu.Lock()
	c.asked++
	job := map[string]string{}
	for id, v := range c.job {
		job[id] = v
		if next := c.later[id]; len(next) > 0 && len(names) > 0 && names[0] == id {
			c.job[id], c.later[id] = next[0], next[1:]
		}
	}
	c.mu.Unlock()
	var out []flink.MetricValue
	for id, v := range job {
		if len(names) == 0 || names[0] == id {
			v := v
			out = append(out, flink.MetricValue{ID: id, Value: &v})
		}
	}
	return out, nil
}

func (c *metricsClient) VertexMetrics(_ context.Context, _, vertexID string, names ...string) ([]flink.MetricValue, error) {
	var out []flink.MetricValue
	for id, v := range c.vertex[vertexID] {
		if len(names) == 0 || names[0] == id {
			v := v
			out = append(out, flink.MetricValue{ID: id, Sum: &v, Min: &v, Max: &v, Avg: &v})
		}
	}
	return out, nil
}

// runChecks runs checkMetrics as an activity on a clock that moves 5 s
// each time it is read, so the grace runs out in a few polls.
func runChecks(client core.FlinkAPI, checks []MetricCheck) (converter.EncodedValue, error) {
	clock := time.Unix(0, 0)
	var mu sync.Mutex
	a := &Activities{PollInterval: time.Millisecond, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(5 * time.Second)
		return clock
	}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context) ([]MetricReading, error) {
		return a.checkMetrics(ctx, client, "j", checks)
	}, activity.RegisterOptions{Name: "checks"})
	return env.ExecuteActivity("checks")
}

func TestMetricChecks(t *testing.T) {
	zero, one, big := 0.0, 1.0, 1e9
	client := &metricsClient{
		vertices: []flink.JobVertex{{ID: "v1", Name: "Source: orders"}, {ID: "v2", Name: "Sink: payments"}},
		job:      map[string]string{"numRestarts": "0", "uptime": "61000", "weird": "n/a"},
		vertex:   map[string]map[string]float64{"v1": {"numRecordsOut": 500}, "v2": {"numRecordsOut": 0}},
	}
	for name, tc := range map[string]struct {
		checks []MetricCheck
		want   string // "" passes
	}{
		"job metric within bounds":  {[]MetricCheck{{Metric: "numRestarts", Max: &zero}}, ""},
		"job metric out of bounds":  {[]MetricCheck{{Metric: "uptime", Max: &one}}, "health check uptime <= 1 failed: job reports 61000"},
		"vertex metric":             {[]MetricCheck{{Metric: "numRecordsOut", Vertex: "Source", Min: &one}}, ""},
		"every matching vertex":     {[]MetricCheck{{Metric: "numRecordsOut", Vertex: "*", Min: &one}}, "Sink: payments reports 0"},
		"no vertex matches":         {[]MetricCheck{{Metric: "numRecordsOut", Vertex: "Enrich", Max: &big}}, `no vertex of job j matches "Enrich" (its vertices: Source: orders; Sink: payments)`},
		"metric not reported":       {[]MetricCheck{{Metric: "numRecordsOutPerSecond", Vertex: "Sink", Min: &one}}, "does not report numRecordsOutPerSecond"},
		"job metric not a number":   {[]MetricCheck{{Metric: "weird", Max: &one}}, "not a number"},
		"job metric never reported": {[]MetricCheck{{Metric: "numFailures", Max: &one}}, "it reports: numRestarts, uptime, weird"},
	} {
		t.Run(name, func(t *testing.T) {
			v, err := runChecks(client, tc.checks)
			if tc.want == "" {
				var got []MetricReading
				if err != nil || v.Get(&got) != nil || len(got) == 0 {
					t.Fatalf("checks: %v, readings %v; want them passed", err, got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checks: %v; want %q", err, tc.want)
			}
		})
	}
}

// A value below its minimum is read again, as Flink's metric fetcher lags
// a job that has just started: a counter that reaches it within the grace
// passes, one that does not fails with its last value. A value above its
// maximum fails at once.
func TestMetricCheckBelowMinimumIsReadAgain(t *testing.T) {
	one, ten := 1.0, 10.0
	for name, tc := range map[string]struct {
		check     MetricCheck
		job       string
		later     []string
		want      string // "" passes
		wantValue float64
		wantAsked int // 0: any
	}{
		"counter catches up":       {MetricCheck{Metric: "c", Min: &one}, "0", []string{"0", "7"}, "", 7, 3},
		"counter never gets there": {MetricCheck{Metric: "c", Min: &one}, "0", nil, "health check c >= 1 failed: job reports 0, still below the minimum", 0, 0},
		"above maximum at once":    {MetricCheck{Metric: "c", Max: &ten}, "11", []string{"0"}, "health check c <= 10 failed: job reports 11", 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			client := &metricsClient{job: map[string]string{"c": tc.job}, later: map[string][]string{"c": tc.later}}
			v, err := runChecks(client, []MetricCheck{tc.check})
			if tc.wantAsked > 0 && client.asked != tc.wantAsked {
				t.Errorf("Flink asked %d times, want %d", client.asked, tc.wantAsked)
			}
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("checks: %v; want %q", err, tc.want)
				}
				return
			}
			var got []MetricReading
			if err != nil || v.Get(&got) != nil || len(got) != 1 || got[0].Value != tc.wantValue {
				t.Fatalf("checks: %v, readings %+v; want one reading of %g", err, got, tc.wantValue)
			}
		})
	}
}

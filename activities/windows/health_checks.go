package windows

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// MetricCheck is a health check beyond RUNNING and a checkpoint: a metric
// from Flink's REST API within bounds at the end of the soak, e.g. records
// flowing out of the sink, or no restarts. Above its maximum fails at once;
// below its minimum is read again for up to metricGrace, as Flink's metrics
// lag the job.
type MetricCheck struct {
	// Metric is the metric's id as Flink's REST API lists it: a job metric
	// (numRestarts, uptime, lastCheckpointDuration) when vertex is empty,
	// else a subtask metric (numRecordsOut, numRecordsInPerSecond,
	// backPressuredTimeMsPerSecond).
	Metric string `json:"metric" yaml:"metric"`
	// Vertex selects the job vertices whose subtasks are checked: those
	// whose name contains it, or "*" for every vertex. Each vertex it
	// selects must pass.
	Vertex string `json:"vertex,omitempty" yaml:"vertex,omitempty"`
	// Agg is how a vertex's subtasks are combined: sum (default), min, max
	// or avg.
	Agg string `json:"agg,omitempty" yaml:"agg,omitempty"`
	// Min is the lowest value that passes (inclusive); min, max or both
	// are required.
	Min *float64 `json:"min,omitempty" yaml:"min,omitempty"`
	// Max is the highest value that passes (inclusive).
	Max *float64 `json:"max,omitempty" yaml:"max,omitempty"`
}

// Validate names what is wrong with a check and what would be valid.
func (c MetricCheck) Validate(field string) error {
	switch {
	case c.Metric == "" || strings.ContainsAny(c.Metric, ", \t\n"):
		return fmt.Errorf("%s.metric=%q: a metric id as Flink's REST API lists it, e.g. numRestarts or numRecordsOut", field, c.Metric)
	case c.Min == nil && c.Max == nil:
		return fmt.Errorf("%s (%s): give min, max or both", field, c.Metric)
	case c.Min != nil && c.Max != nil && *c.Min > *c.Max:
		return fmt.Errorf("%s (%s): min %g is above max %g", field, c.Metric, *c.Min, *c.Max)
	case c.Min != nil && (math.IsNaN(*c.Min) || math.IsInf(*c.Min, 0)) || c.Max != nil && (math.IsNaN(*c.Max) || math.IsInf(*c.Max, 0)):
		return fmt.Errorf("%s (%s): min and max must be finite numbers", field, c.Metric)
	case c.Vertex == "" && c.Agg != "":
		return fmt.Errorf("%s.agg=%q: a job metric has one value; agg is for a vertex's subtasks (set vertex, or leave agg out)", field, c.Agg)
	case c.Agg != "" && c.Agg != "sum" && c.Agg != "min" && c.Agg != "max" && c.Agg != "avg":
		return fmt.Errorf("%s.agg=%q: use sum, min, max or avg", field, c.Agg)
	}
	return nil
}

// String says what the check wants, e.g. "numRecordsOut (sum over vertices
// matching Sink) >= 1".
func (c MetricCheck) String() string {
	s := c.Metric
	if c.Vertex != "" {
		s += fmt.Sprintf(" (%s over vertices matching %q)", c.agg(), c.Vertex)
	}
	var b []string
	if c.Min != nil {
		b = append(b, ">= "+strconv.FormatFloat(*c.Min, 'g', -1, 64))
	}
	if c.Max != nil {
		b = append(b, "<= "+strconv.FormatFloat(*c.Max, 'g', -1, 64))
	}
	return s + " " + strings.Join(b, " and ")
}

func (c MetricCheck) agg() string {
	if c.Agg == "" && c.Vertex != "" {
		return "sum"
	}
	return c.Agg
}

// MetricReading is a check's value as read, for the report.
type MetricReading struct {
	Check  string  `json:"check"`
	Source string  `json:"source"` // "job" or the vertex name
	Value  float64 `json:"value"`
}

// metricGrace is how long the checks of one job may wait for a metric
// Flink does not report yet, or that is still below its minimum: the
// JobManager fetches metrics from the TaskManagers every
// metrics.fetcher.update-interval (10s by default), so a job that has just
// started may show a counter as missing or 0 that is already counting.
const metricGrace = 35 * time.Second

// checkMetrics reads every check's metric and fails the job, naming the
// check, the value and where it came from, when one is out of bounds or
// Flink does not report it: a check that cannot be read is not passed.
func (a *Activities) checkMetrics(ctx context.Context, client core.FlinkAPI, jobID string, checks []MetricCheck) ([]MetricReading, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	d, err := client.JobDetails(ctx, jobID)
	if err != nil {
		return nil, core.Classify("job "+jobID, err)
	}
	deadline := core.Now(a.Now).Add(metricGrace)
	var out []MetricReading
	for _, c := range checks {
		if c.Vertex == "" {
			r, err := a.readMetric(ctx, c, "job", deadline, func(names ...string) ([]flink.MetricValue, error) { return client.JobMetrics(ctx, jobID, names...) })
			if err != nil {
				return out, err
			}
			out = append(out, r)
			continue
		}
		var names []string
		matched := 0
		for _, v := range d.Vertices {
			names = append(names, v.Name)
			if c.Vertex != "*" && !strings.Contains(v.Name, c.Vertex) {
				continue
			}
			matched++
			r, err := a.readMetric(ctx, c, v.Name, deadline, func(names ...string) ([]flink.MetricValue, error) {
				return client.VertexMetrics(ctx, jobID, v.ID, names...)
			})
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
		if matched == 0 {
			return out, core.NonRetryable(core.ErrTypeJobUnhealthy, "health check %s: no vertex of job %s matches %q (its vertices: %s)", c, jobID, c.Vertex, strings.Join(names, "; "))
		}
	}
	return out, nil
}

// readMetric evaluates one check on one source. A value above its maximum
// fails at once: it has been seen. A value below its minimum, or a metric
// Flink does not report yet, is asked for again until deadline, then fails
// the check with the last value or the ids Flink does report.
func (a *Activities) readMetric(ctx context.Context, c MetricCheck, source string, deadline time.Time, get func(names ...string) ([]flink.MetricValue, error)) (MetricReading, error) {
	var below *MetricReading // the last reading under the minimum
	for {
		vals, err := get(c.Metric)
		if err != nil {
			return MetricReading{}, core.Classify(fmt.Sprintf("metric %s of %s", c.Metric, source), err)
		}
		for _, m := range vals {
			if m.ID != c.Metric {
				continue
			}
			v, ok := m.Number(c.agg())
			if !ok {
				return MetricReading{}, core.NonRetryable(core.ErrTypeJobUnhealthy, "health check %s: %s reports %s, not a number", c, source, m)
			}
			r := MetricReading{Check: c.String(), Source: source, Value: v}
			if c.Max != nil && v > *c.Max {
				return r, core.NonRetryable(core.ErrTypeJobUnhealthy, "health check %s failed: %s reports %g", c, source, v)
			}
			if c.Min != nil && v < *c.Min {
				below = &r
				break
			}
			return r, nil
		}
		if core.Now(a.Now).After(deadline) {
			break
		}
		activity.RecordHeartbeat(ctx, "waiting for metric "+c.Metric)
		if err := core.Sleep(ctx, core.PollInterval(a.PollInterval)); err != nil {
			return MetricReading{}, err
		}
	}
	if below != nil {
		return *below, core.NonRetryable(core.ErrTypeJobUnhealthy, "health check %s failed: %s reports %g, still below the minimum %s after the soak", c, source, below.Value, metricGrace)
	}
	ids := "unavailable"
	if all, err := get(); err == nil {
		var list []string
		for _, m := range all {
			list = append(list, m.ID)
		}
		sort.Strings(list)
		if len(list) > 30 {
			list = append(list[:30], fmt.Sprintf("... %d more", len(list)-30))
		}
		ids = strings.Join(list, ", ")
	}
	return MetricReading{}, core.NonRetryable(core.ErrTypeJobUnhealthy, "health check %s: %s does not report %s within %s (it reports: %s)", c, source, c.Metric, metricGrace, ids)
}

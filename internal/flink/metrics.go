package flink

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// MetricValue is one metric as Flink reports it. A job metric has Value
// (Flink sends numbers as strings); an aggregated subtask metric has Min,
// Max, Avg and Sum.
type MetricValue struct {
	ID    string   `json:"id"`
	Value *string  `json:"value,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	Avg   *float64 `json:"avg,omitempty"`
	Sum   *float64 `json:"sum,omitempty"`
}

// Number is the metric's value under agg ("" for a job metric's Value;
// min, max, avg or sum for an aggregated one); ok is false when Flink did
// not report it or it is not a number.
func (m MetricValue) Number(agg string) (float64, bool) {
	var p *float64
	switch agg {
	case "":
		if m.Value == nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(*m.Value), 64)
		return v, err == nil
	case "min":
		p = m.Min
	case "max":
		p = m.Max
	case "avg":
		p = m.Avg
	case "sum":
		p = m.Sum
	}
	if p == nil {
		return 0, false
	}
	return *p, true
}

// JobMetrics returns GET /jobs/{jobid}/metrics: the named metrics Flink
// has (an unknown name is left out, not an error), or, with no names,
// the ids of every metric the job reports.
func (c *Client) JobMetrics(ctx context.Context, jobID string, names ...string) ([]MetricValue, error) {
	const op = "job metrics"
	if err := checkID(op, "job ID", jobID); err != nil {
		return nil, err
	}
	q, err := metricQuery(op, names, "")
	if err != nil {
		return nil, err
	}
	var out []MetricValue
	err = c.do(ctx, request{op: op, ep: epJobMetrics, args: []string{jobID}, query: q, notFound: ErrorReasonJobNotFound}, &out)
	return out, err
}

// VertexMetrics returns GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics:
// the named metrics aggregated over the vertex's subtasks (min, max, avg,
// sum), or, with no names, the ids of every metric its subtasks report.
func (c *Client) VertexMetrics(ctx context.Context, jobID, vertexID string, names ...string) ([]MetricValue, error) {
	const op = "vertex metrics"
	if err := checkID(op, "job ID", jobID); err != nil {
		return nil, err
	}
	if err := checkID(op, "vertex ID", vertexID); err != nil {
		return nil, err
	}
	q, err := metricQuery(op, names, "min,max,avg,sum")
	if err != nil {
		return nil, err
	}
	var out []MetricValue
	err = c.do(ctx, request{op: op, ep: epVertexMetrics, args: []string{jobID, vertexID}, query: q, notFound: ErrorReasonJobNotFound}, &out)
	return out, err
}

func metricQuery(op string, names []string, agg string) (url.Values, error) {
	q := url.Values{}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, ", \t\n") {
			return nil, invalidArgument(op, "metric name %q must be non-empty, without commas or spaces", n)
		}
	}
	if len(names) > 0 {
		q.Set("get", strings.Join(names, ","))
		if agg != "" {
			q.Set("agg", agg)
		}
	}
	if len(q) == 0 {
		return nil, nil
	}
	return q, nil
}

// String shows a metric as Flink reported it.
func (m MetricValue) String() string {
	if m.Value != nil {
		return m.ID + "=" + *m.Value
	}
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	return fmt.Sprintf("%s(min %s, max %s, avg %s, sum %s)", m.ID, f(m.Min), f(m.Max), f(m.Avg), f(m.Sum))
}

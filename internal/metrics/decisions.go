package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// decisionLabels: the run's kind (window, upgrade, governance), the
// decision's kind (network-change, approval, ...) and the run's name, as
// the notifications name them.
var decisionLabels = []string{"kind", "decision", "run"}

// Decisions exports the decisions runs wait on, from the notices of them
// this worker delivered (first notice, reminders, answered). Any replica
// may deliver any notice, so each keeps what it last heard: the recording
// rules take, per decision, the replica with the newest notice. An entry
// not heard of again for twice its reminder interval (an hour when it has
// none) is dropped, as the Alertmanager sink lets its alert end: its run
// ended without an answered notice, or another replica took the reminders.
type Decisions struct {
	since, notice *prometheus.Desc
	now           func() time.Time

	mu      sync.Mutex
	entries map[decisionKey]decisionEntry
}

type decisionKey struct{ kind, decision, run string }

type decisionEntry struct {
	since, at time.Time
	answered  bool
	keep      time.Duration
}

// NewDecisions returns an empty collector.
func NewDecisions() *Decisions {
	return &Decisions{
		since: prometheus.NewDesc(Namespace+"_decision_pending_since_timestamp_seconds",
			"Unix time since which a run has waited for a person's decision, per the newest notice of it this worker delivered; absent once answered.",
			decisionLabels, nil),
		notice: prometheus.NewDesc(Namespace+"_decision_notice_timestamp_seconds",
			"Unix time of the newest notice (waiting, reminder or answered) of a decision this worker delivered: the replica with the newest one knows whether it still waits.",
			decisionLabels, nil),
		now:     time.Now,
		entries: map[decisionKey]decisionEntry{},
	}
}

// Notified records a notice of the decision a run waits on: waiting since
// since, or answered; at is the notice's time and every how often it is
// repeated while unanswered (0: never). A notice older than the one held
// (delivered late, or retried) changes nothing.
func (d *Decisions) Notified(kind, decision, run string, since, at time.Time, answered bool, every time.Duration) {
	keep := 2 * every
	if every <= 0 {
		keep = time.Hour
	}
	k := decisionKey{kind, decision, run}
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[k]; ok && at.Before(old.at) {
		return
	}
	d.entries[k] = decisionEntry{since: since, at: at, answered: answered, keep: keep}
	d.prune()
}

// prune drops the entries kept long enough; d.mu is held.
func (d *Decisions) prune() {
	now := d.now()
	for k, e := range d.entries {
		if now.Sub(e.at) > e.keep {
			delete(d.entries, k)
		}
	}
}

// Describe implements prometheus.Collector.
func (d *Decisions) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.since
	ch <- d.notice
}

// Collect implements prometheus.Collector.
func (d *Decisions) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prune()
	for k, e := range d.entries {
		ch <- prometheus.MustNewConstMetric(d.notice, prometheus.GaugeValue, unixSeconds(e.at), k.kind, k.decision, k.run)
		if !e.answered {
			ch <- prometheus.MustNewConstMetric(d.since, prometheus.GaugeValue, unixSeconds(e.since), k.kind, k.decision, k.run)
		}
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

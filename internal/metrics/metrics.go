// Package metrics owns the worker's Prometheus registry: the Temporal SDK's
// metrics (through tally's Prometheus reporter) and flinkmaint's own.
package metrics

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// Namespace prefixes flinkmaint's own metric names.
const Namespace = "flinkmaint"

// Metrics bundles the registry, the SDK handler and the project's metrics.
type Metrics struct {
	Registry *prometheus.Registry
	// SDK goes into client.Options.MetricsHandler.
	SDK client.MetricsHandler
	// BuildInfo is 1, labelled with the version, so dashboards see rollouts.
	BuildInfo *prometheus.GaugeVec

	scope io.Closer
}

// New creates a registry with Go runtime, process, SDK and project metrics.
func New(version string) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("metrics: go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("metrics: process collector: %w", err)
	}
	var regErr error
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError:  func(err error) { regErr = err },
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, time.Second)
	if regErr != nil {
		return nil, fmt.Errorf("metrics: sdk reporter: %w", regErr)
	}
	m := &Metrics{
		Registry: reg,
		SDK:      sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "build_info", Help: "Always 1; the version label names the running build.",
		}, []string{"version"}),
		scope: closer,
	}
	if err := reg.Register(m.BuildInfo); err != nil {
		return nil, fmt.Errorf("metrics: build_info: %w", err)
	}
	m.BuildInfo.WithLabelValues(version).Set(1)
	return m, nil
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Close flushes and stops the SDK metrics scope.
func (m *Metrics) Close() error { return m.scope.Close() }

package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/redact"
)

// FlinkClients keeps one REST client per endpoint and effective settings.
// A cluster's settings are the fleet default (flink.rest) overridden by its
// own (inventory clusters' rest), which the adapter learns from every
// discovery; activities ask by REST URL only, so no setting is ever
// recorded in a workflow's history.
type FlinkClients struct {
	// Options are the template; BaseURL, TLS and credentials are set per
	// endpoint.
	Options flink.Options
	// Default is flink.rest; its tls applies to https:// endpoints only.
	Default inventory.RESTSecurity
	// Inventory, when set, is asked for the clusters when a REST URL is
	// not known yet (a worker that restarted during a window).
	Inventory core.InventorySource
	// Drill are the drill clusters' own settings by REST URL
	// (drill.rest, drill.clusters[].rest): they are outside the inventory.
	Drill map[string]*inventory.RESTSecurity
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	mu        sync.Mutex
	clients   map[clientKey]cachedClient
	endpoints map[string]endpoint // by REST URL, from the last discovery
	learnedAt time.Time
}

// clientKey is an endpoint and the settings its client was built with.
type clientKey struct{ url, settings string }

// cachedClient is a client and the state of the TLS files it loaded, so a
// renewed certificate or CA bundle gets a new client.
type cachedClient struct {
	files  string
	client *flink.Client
}

// endpoint is what the inventory says of one REST URL.
type endpoint struct {
	cluster string
	rest    *inventory.RESTSecurity
}

// relearnAfter is how old the known endpoints may be before an unknown
// REST URL makes the adapter discover again.
const relearnAfter = 10 * time.Second

var _ core.FlinkClients = (*FlinkClients)(nil)

// For returns the client of restURL, with the settings of its cluster.
func (f *FlinkClients) For(ctx context.Context, restURL string) (core.FlinkAPI, error) {
	ep, err := f.endpoint(ctx, restURL)
	if err != nil {
		return nil, err
	}
	eff := f.Default.Merge(ep.rest)
	if ep.rest == nil || ep.rest.TLS == (inventory.RESTTLS{}) {
		if !strings.HasPrefix(strings.ToLower(restURL), "https://") {
			// The fleet's CA and client certificate are for https
			// endpoints; an http one is reached without them.
			eff.TLS = inventory.RESTTLS{}
		}
	}
	key := clientKey{url: restURL, settings: eff.Key()}
	files := fileStamps(eff.TLS.CAFile, eff.TLS.CertFile, eff.TLS.KeyFile)

	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok && c.files == files {
		return c.client, nil
	}
	opts := f.Options
	opts.BaseURL = restURL
	opts.Cluster = ep.cluster
	opts.TLS = flink.TLSOptions{CAFile: eff.TLS.CAFile, CertFile: eff.TLS.CertFile, KeyFile: eff.TLS.KeyFile, ServerName: eff.TLS.ServerName}
	opts.BearerTokenFile = eff.TokenFile
	if b := eff.BasicAuth; b != nil {
		opts.BasicAuth = &flink.BasicAuth{Username: b.Username, PasswordFile: b.PasswordFile}
	}
	opts.Headers = eff.Headers
	c, err := flink.New(opts)
	if err != nil {
		if ep.cluster != "" {
			return nil, fmt.Errorf("cluster %s (%s): %w", ep.cluster, redact.URL(restURL), err)
		}
		return nil, err
	}
	if f.clients == nil {
		f.clients = map[clientKey]cachedClient{}
	}
	f.clients[key] = cachedClient{files: files, client: c}
	return c, nil
}

// endpoint returns what the inventory says of restURL, discovering again
// when the URL is unknown and the last discovery is not recent. A URL the
// inventory does not list (a drill cluster) gets the fleet default.
func (f *FlinkClients) endpoint(ctx context.Context, restURL string) (endpoint, error) {
	if rest, ok := f.Drill[restURL]; ok {
		return endpoint{cluster: "drill cluster", rest: rest}, nil
	}
	f.mu.Lock()
	ep, known := f.endpoints[restURL]
	stale := f.now().Sub(f.learnedAt) >= relearnAfter
	f.mu.Unlock()
	if known || !stale || f.Inventory == nil {
		return ep, nil
	}
	inv, err := f.Inventory.Discover(ctx)
	if err != nil {
		return endpoint{}, fmt.Errorf("REST settings of %s: discover the inventory: %w", redact.URL(restURL), err)
	}
	f.learn(inv)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.endpoints[restURL], nil
}

// learn replaces the known endpoints with inv's.
func (f *FlinkClients) learn(inv inventory.Inventory) {
	eps := make(map[string]endpoint, len(inv.Clusters))
	for _, c := range inv.Clusters {
		eps[c.RESTURL] = endpoint{cluster: clusterLabel(c), rest: c.REST}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endpoints, f.learnedAt = eps, f.now()
}

func (f *FlinkClients) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Observing returns src, teaching f the REST settings of every inventory
// it discovers.
func (f *FlinkClients) Observing(src core.InventorySource) *ObservedInventory {
	return &ObservedInventory{Source: src, clients: f}
}

// ObservedInventory is an inventory source whose discoveries also tell the
// Flink clients each cluster's REST settings.
type ObservedInventory struct {
	Source  core.InventorySource
	clients *FlinkClients
}

var _ core.InventorySource = (*ObservedInventory)(nil)

// Discover discovers with Source and hands the result to the clients.
func (o *ObservedInventory) Discover(ctx context.Context) (inventory.Inventory, error) {
	inv, err := o.Source.Discover(ctx)
	if err == nil {
		o.clients.learn(inv)
	}
	return inv, err
}

// clusterLabel names a cluster in errors: its id, after its Kubernetes
// cluster and namespace when it has them.
func clusterLabel(c inventory.Cluster) string {
	parts := make([]string, 0, 3)
	for _, p := range []string{c.KubeCluster, c.Namespace, c.ClusterID} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

// fileStamps describes the files' sizes and modification times; a change
// means a client must load them again.
func fileStamps(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s:missing;", p)
		}
	}
	return b.String()
}

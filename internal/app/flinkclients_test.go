package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// pki is a CA that signs certificates into a directory.
type pki struct {
	dir    string
	caFile string
	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
}

func newPKI(t *testing.T, dir, name string) *pki {
	t.Helper()
	p := &pki{dir: dir}
	p.caFile, _, p.ca, p.key = p.issue(t, name, true, 0)
	return p
}

// issue writes a certificate for name (and its key) signed by the CA, or a
// self-signed CA when ca is true.
func (p *pki) issue(t *testing.T, name string, ca bool, usage x509.ExtKeyUsage) (certFile, keyFile string, cert *x509.Certificate, key *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{name}}
	parent, signer := tmpl, key
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		parent, signer = p.ca, p.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert, key
}

// inventorySource is a fixed inventory that counts its discoveries.
type inventorySource struct {
	inv   inventory.Inventory
	calls atomic.Int32
}

func (s *inventorySource) Discover(context.Context) (inventory.Inventory, error) {
	s.calls.Add(1)
	return s.inv, nil
}

// The worker's Flink clients take each cluster's REST settings from the
// inventory over the fleet default: an mTLS endpoint is reached with its
// cluster's CA and client certificate, a cluster whose CA is wrong fails
// with an error naming it, its URL and the CA file, not retried, and the
// client cache tells settings and renewed files apart.
func TestFlinkClientsPerClusterTLS(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir, "flink-ca")
	other := newPKI(t, t.TempDir(), "other-ca")
	srvCert, srvKey, _, _ := p.issue(t, "flink-rest.internal", false, x509.ExtKeyUsageServerAuth)
	cliCert, cliKey, _, _ := p.issue(t, "flinkmaint", false, x509.ExtKeyUsageClientAuth)
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	var routes atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		routes.Store(r.Header.Get("X-Route"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	good := srv.URL
	// The same endpoint under another name: a second cluster of the inventory.
	wrongCA := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	own := &inventory.RESTSecurity{TLS: inventory.RESTTLS{CAFile: p.caFile, CertFile: cliCert, KeyFile: cliKey, ServerName: "flink-rest.internal"}}
	src := &inventorySource{inv: inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-a", Root: "/user/app/team-a"}},
		Clusters: []inventory.Cluster{
			{Tenant: "team-a", ClusterID: "cluster-ssl", Source: inventory.SourceStatic, Mode: inventory.ModeSession, RESTURL: good, REST: own},
			{Tenant: "team-a", ClusterID: "cluster-wrong-ca", Source: inventory.SourceStatic, Mode: inventory.ModeSession, RESTURL: wrongCA,
				REST: &inventory.RESTSecurity{TLS: inventory.RESTTLS{CAFile: other.caFile}}},
		},
	}}
	fc := &app.FlinkClients{
		Options: flink.Options{RequestTimeout: 5 * time.Second},
		// The fleet's client certificate and server name serve the
		// cluster that only names its own CA.
		Default:   inventory.RESTSecurity{TLS: inventory.RESTTLS{CertFile: cliCert, KeyFile: cliKey, ServerName: "flink-rest.internal"}, Headers: map[string]string{"X-Route": "fleet"}},
		Inventory: src,
	}
	ctx := context.Background()

	// A worker that restarted mid-window asks before any discovery: the
	// adapter discovers by itself.
	c, err := fc.For(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListJobs(ctx); err != nil {
		t.Fatalf("list over the cluster's mTLS settings: %v", err)
	}
	if routes.Load() != "fleet" || src.calls.Load() != 1 {
		t.Fatalf("X-Route %v after %d discoveries; want the fleet's header after 1", routes.Load(), src.calls.Load())
	}
	again, _ := fc.For(ctx, good)
	if again != c {
		t.Fatal("the same endpoint and settings got a new client")
	}

	// A renewed CA bundle (same path, new content) gets a new client.
	b, _ := os.ReadFile(p.caFile)
	if err := os.WriteFile(p.caFile, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if renewed, _ := fc.For(ctx, good); renewed == c {
		t.Fatal("a renewed CA file kept the old client")
	}

	// The wrong CA, through the activity that discovers a window's jobs.
	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	acts := &app.Ports{Inventory: fc.Observing(src), Flink: fc}
	app.RegisterActivities(aenv, acts)
	_, err = aenv.ExecuteActivity(app.NewFamilies(acts).Windows.DiscoverJobs, core.DiscoverJobsInput{Scope: core.Scope{Clusters: []string{"cluster-wrong-ca"}}})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != flink.ErrorReasonTLS {
		t.Fatalf("want a non-retryable %s, got %v", flink.ErrorReasonTLS, err)
	}
	for _, w := range []string{"cluster-wrong-ca", "TLS with cluster cluster-wrong-ca at " + wrongCA, "CA file " + other.caFile} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if src.calls.Load() != 2 {
		t.Fatalf("%d discoveries; want 2 (one per activity, none more)", src.calls.Load())
	}
}

// An http endpoint is reached without the fleet's TLS settings; an
// endpoint no cluster lists (a drill cluster without drill.rest) gets the
// fleet default.
func TestFlinkClientsFleetDefaultOnHTTP(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	p := newPKI(t, dir, "flink-ca")
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("fleet-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	fc := &app.FlinkClients{
		Default:   inventory.RESTSecurity{TLS: inventory.RESTTLS{CAFile: p.caFile}, TokenFile: token},
		Inventory: &inventorySource{inv: inventory.Inventory{}},
	}
	c, err := fc.For(context.Background(), srv.URL)
	if err != nil {
		t.Fatalf("the fleet's TLS settings refused an http endpoint: %v", err)
	}
	if _, err := c.ListJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if auth.Load() != "Bearer fleet-token" {
		t.Fatalf("Authorization %v, want the fleet token", auth.Load())
	}
}

// A drill cluster's own settings (drill.rest, drill.clusters[].rest)
// override the fleet default key by key, as an inventory cluster's do;
// another endpoint outside the inventory keeps the fleet default.
func TestFlinkClientsDrillClusterSettings(t *testing.T) {
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization") + "|" + r.Header.Get("X-Route"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	drillURL, otherURL := srv.URL+"/", srv.URL
	fc := &app.FlinkClients{
		Default:   inventory.RESTSecurity{TokenFile: write("fleet", "fleet-token"), Headers: map[string]string{"X-Route": "fleet"}},
		Drill:     map[string]*inventory.RESTSecurity{drillURL: {TokenFile: write("drill", "drill-token")}},
		Inventory: &inventorySource{inv: inventory.Inventory{}},
	}
	for url, want := range map[string]string{drillURL: "Bearer drill-token|fleet", otherURL: "Bearer fleet-token|fleet"} {
		c, err := fc.For(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListJobs(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := seen.Load(); got != want {
			t.Errorf("%s was called with %v; want %s", url, got, want)
		}
	}
}

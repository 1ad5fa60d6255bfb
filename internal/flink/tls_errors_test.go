package flink

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// mtlsServer is a REST endpoint that requires a client certificate signed
// by its CA, serving a certificate for flink-rest.internal.
func mtlsServer(t *testing.T, dir string) (srv *httptest.Server, caFile, cliCert, cliKey string) {
	t.Helper()
	caFile, _, ca, caKey := writeCert(t, dir, "test-ca", nil, nil, x509.ExtKeyUsageAny)
	srvCert, srvKey, _, _ := writeCert(t, dir, "flink-rest.internal", ca, caKey, x509.ExtKeyUsageServerAuth)
	cliCert, cliKey, _, _ = writeCert(t, dir, "flinkmaint", ca, caKey, x509.ExtKeyUsageClientAuth)
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	// The rejected handshakes of the scenarios are expected.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, caFile, cliCert, cliKey
}

// Every TLS failure names the cluster, its URL and the CA file trusted,
// says what to change, and is not retried: the same handshake fails again.
func TestTLSFailuresNameClusterURLAndCAFile(t *testing.T) {
	dir := t.TempDir()
	srv, caFile, cliCert, cliKey := mtlsServer(t, dir)
	// A CA and a client certificate of another PKI.
	otherCA, _, oca, ocaKey := writeCert(t, filepath.Join(dir), "other-ca", nil, nil, x509.ExtKeyUsageAny)
	strangerCert, strangerKey, _, _ := writeCert(t, dir, "stranger", oca, ocaKey, x509.ExtKeyUsageClientAuth)

	scenarios := map[string]struct {
		tls  TLSOptions
		want []string
	}{
		"unknown authority": {
			TLSOptions{CAFile: otherCA, CertFile: cliCert, KeyFile: cliKey, ServerName: "flink-rest.internal"},
			[]string{"CA file " + otherCA, "signed by no CA trusted here"},
		},
		"no CA file: system roots": {
			TLSOptions{CertFile: cliCert, KeyFile: cliKey, ServerName: "flink-rest.internal"},
			[]string{"the system roots (no CA file)", "signed by no CA trusted here"},
		},
		"hostname mismatch": {
			TLSOptions{CAFile: caFile, CertFile: cliCert, KeyFile: cliKey, ServerName: "other.internal"},
			[]string{"CA file " + caFile, "server name other.internal", "not for this host"},
		},
		"no client certificate": {
			TLSOptions{CAFile: caFile, ServerName: "flink-rest.internal"},
			[]string{"CA file " + caFile, "no client certificate", "refused the handshake"},
		},
		"client certificate of another CA": {
			TLSOptions{CAFile: caFile, CertFile: strangerCert, KeyFile: strangerKey, ServerName: "flink-rest.internal"},
			[]string{"CA file " + caFile, "client certificate " + strangerCert, "refused the handshake"},
		},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			c, err := New(Options{BaseURL: srv.URL, Cluster: "team-a/orders", TLS: sc.tls, RequestTimeout: 5 * time.Second})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, err = c.ListJobs(context.Background())
			if Reason(err) != ErrorReasonTLS || IsRetryable(err) {
				t.Fatalf("want a non-retryable %s, got %q: %v", ErrorReasonTLS, Reason(err), err)
			}
			msg := err.Error()
			for _, w := range append([]string{"cluster team-a/orders at " + srv.URL}, sc.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

// An http endpoint given an https URL is a TLS error that says so.
func TestTLSToPlainHTTPEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: strings.Replace(srv.URL, "http://", "https://", 1), RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListJobs(context.Background())
	if Reason(err) != ErrorReasonTLS || !strings.Contains(err.Error(), "does not speak TLS") {
		t.Fatalf("want %s saying the endpoint does not speak TLS, got %v", ErrorReasonTLS, err)
	}
}

// A bearer token file is read again when it changes: a rotated Secret is
// used from the next request on, by the same client.
func TestBearerTokenFileRotates(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.Header.Get("X-Gateway-Route"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	t.Cleanup(srv.Close)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("first-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{BaseURL: srv.URL, BearerTokenFile: tok, Headers: map[string]string{"X-Gateway-Route": "cluster-a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Another size, so the change shows even where mtimes are coarse.
	if err := os.WriteFile(tok, []byte("the-rotated-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = c.ListJobs(context.Background())
	if Reason(err) != ErrorReasonUnauthorized || !strings.Contains(err.Error(), tok+" is empty") {
		t.Fatalf("an emptied token file: want %s naming it, got %v", ErrorReasonUnauthorized, err)
	}
	want := []string{"Bearer first-token cluster-a", "Bearer the-rotated-token cluster-a"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("requests carried %q, want %q", seen, want)
	}
}

// A basic-auth password file is read as the token file is.
func TestBasicAuthPasswordFile(t *testing.T) {
	srv, rec := fakeFlink(t, 200, "application/json", `{"jobs":[]}`)
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, srv.URL, func(o *Options) { o.BasicAuth = &BasicAuth{Username: "ops", PasswordFile: pw} })
	if _, err := c.ListJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec.auth != "Basic b3BzOnMzY3JldA==" {
		t.Fatalf("Authorization %q", rec.auth)
	}
}

// A JobManager on Flink's default SSL settings allows one cipher suite,
// TLS_RSA_WITH_AES_128_CBC_SHA (security.ssl.algorithms), over TLS 1.2
// (security.ssl.protocol), which Go no longer offers unless asked: the
// client asks, with or without TLS options of its own.
func TestTLSWithFlinksDefaultCipherSuite(t *testing.T) {
	// RSA key exchange needs an RSA server key; Flink's keytool-made
	// keystores hold one. A self-signed certificate, as Flink's SSL guide
	// makes for REST.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flink-rest.internal"}, DNSNames: []string{"flink-rest.internal"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "rest.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, TLS: TLSOptions{CAFile: caFile, ServerName: "flink-rest.internal"}, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListJobs(context.Background()); err != nil {
		t.Fatalf("a server on Flink's default cipher suite: %v", err)
	}
}

package flink

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
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidation(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	scenarios := map[string]struct {
		opts      Options
		wantField string
	}{
		"missing base URL":        {Options{}, "BaseURL"},
		"base URL without scheme": {Options{BaseURL: "jobmanager:8081"}, "BaseURL"},
		"ftp scheme":              {Options{BaseURL: "ftp://jm:8081"}, "BaseURL"},
		"no host":                 {Options{BaseURL: "http:///flink"}, "BaseURL"},
		"query in base URL":       {Options{BaseURL: "http://jm:8081/?x=1"}, "BaseURL"},
		"credentials in base URL": {Options{BaseURL: "http://u:p@jm:8081/"}, "BaseURL"},
		"negative timeout":        {Options{BaseURL: "http://jm", RequestTimeout: -time.Second}, "RequestTimeout"},
		"negative poll interval":  {Options{BaseURL: "http://jm", PollInterval: -time.Second}, "PollInterval"},
		"user agent with newline": {Options{BaseURL: "http://jm", UserAgent: "a\r\nX-Evil: 1"}, "UserAgent"},
		"basic and bearer":        {Options{BaseURL: "http://jm", BasicAuth: &BasicAuth{Username: "u"}, BearerToken: "t"}, "BasicAuth/BearerToken"},
		"basic without user":      {Options{BaseURL: "http://jm", BasicAuth: &BasicAuth{Password: "p"}}, "BasicAuth.Username"},
		"bearer with space":       {Options{BaseURL: "http://jm", BearerToken: "a b"}, "BearerToken"},
		"TLS on http":             {Options{BaseURL: "http://jm", TLS: TLSOptions{ServerName: "jm"}}, "TLS"},
		"CA file missing":         {Options{BaseURL: "https://jm", TLS: TLSOptions{CAFile: filepath.Join(dir, "nope.pem")}}, "TLS.CAFile"},
		"CA file not PEM":         {Options{BaseURL: "https://jm", TLS: TLSOptions{CAFile: notPEM}}, "TLS.CAFile"},
		"cert without key":        {Options{BaseURL: "https://jm", TLS: TLSOptions{CertFile: notPEM}}, "TLS.CertFile/TLS.KeyFile"},
		"unloadable key pair":     {Options{BaseURL: "https://jm", TLS: TLSOptions{CertFile: notPEM, KeyFile: notPEM}}, "TLS.CertFile/TLS.KeyFile"},
		"TLS with own transport":  {Options{BaseURL: "https://jm", TLS: TLSOptions{ServerName: "x"}, Transport: http.DefaultTransport}, "TLS"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			_, err := New(sc.opts)
			var oe *OptionsError
			if !errors.As(err, &oe) || oe.Field != sc.wantField {
				t.Fatalf("want OptionsError on %s, got %v", sc.wantField, err)
			}
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), sc.wantField) {
				t.Fatalf("error %q: not ErrInvalidArgument or does not name %s", err, sc.wantField)
			}
			if verr := sc.opts.Validate(); verr == nil {
				t.Fatal("Validate accepted what New rejected")
			}
		})
	}
}

// A base URL that carries a password never shows it, whatever else is
// wrong with it.
func TestOptionsErrorsHideCredentials(t *testing.T) {
	for _, raw := range []string{"http://alice:s3cret@jm:8081/", "http://alice:s3cret@[::1", "ftp://alice:s3cret@jm/", "http://alice:s3cret@jm/?q=1", "http://alice:s3cret@/x"} {
		_, err := New(Options{BaseURL: raw})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "BaseURL") {
			t.Errorf("%s: %v; want an error on BaseURL without the password", raw, err)
		}
	}
}

func TestAuthHeaders(t *testing.T) {
	scenarios := map[string]struct {
		mod  func(*Options)
		want string
	}{
		"none":   {func(*Options) {}, ""},
		"basic":  {func(o *Options) { o.BasicAuth = &BasicAuth{Username: "ops", Password: "s3cret"} }, "Basic b3BzOnMzY3JldA=="},
		"bearer": {func(o *Options) { o.BearerToken = "tok.en" }, "Bearer tok.en"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			srv, rec := fakeFlink(t, 200, "application/json", `{"jobs":[]}`)
			c := newTestClient(t, srv.URL, sc.mod)
			if _, err := c.ListJobs(context.Background()); err != nil {
				t.Fatal(err)
			}
			if rec.auth != sc.want || rec.userAgent != DefaultUserAgent {
				t.Fatalf("Authorization %q, User-Agent %q", rec.auth, rec.userAgent)
			}
		})
	}
}

// writeCert creates a self-signed CA and a certificate it signs, as PEM
// files; returns the CA file, cert file and key file.
func writeCert(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (string, string, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{name},
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	parent, signer := tmpl, key
	if ca == nil {
		// A CA restricted to one extended key usage could not sign both
		// server and client certificates.
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = nil
	} else {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	certFile := filepath.Join(dir, name+".crt")
	keyFile := filepath.Join(dir, name+".key")
	keyDER, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert, key
}

func TestTLSWithCustomCAClientCertAndServerName(t *testing.T) {
	dir := t.TempDir()
	caFile, _, ca, caKey := writeCert(t, dir, "test-ca", nil, nil, x509.ExtKeyUsageAny)
	srvCert, srvKey, _, _ := writeCert(t, dir, "flink-rest.internal", ca, caKey, x509.ExtKeyUsageServerAuth)
	cliCert, cliKey, _, _ := writeCert(t, dir, "flinkmaint", ca, caKey, x509.ExtKeyUsageClientAuth)

	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	base := srv.URL + "/flink/cluster-a/"

	scenarios := map[string]struct {
		tls    TLSOptions
		reason string
	}{
		"CA, client cert and server name": {TLSOptions{CAFile: caFile, CertFile: cliCert, KeyFile: cliKey, ServerName: "flink-rest.internal"}, ""},
		"no CA: unknown authority":        {TLSOptions{CertFile: cliCert, KeyFile: cliKey, ServerName: "flink-rest.internal"}, ErrorReasonTLS},
		"wrong server name":               {TLSOptions{CAFile: caFile, CertFile: cliCert, KeyFile: cliKey, ServerName: "other.internal"}, ErrorReasonTLS},
		"no client certificate":           {TLSOptions{CAFile: caFile, ServerName: "flink-rest.internal"}, ErrorReasonTLS},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			c, err := New(Options{BaseURL: base, TLS: sc.tls, RequestTimeout: 3 * time.Second})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, err = c.ListJobs(context.Background())
			if sc.reason == "" {
				if err != nil {
					t.Fatalf("list over mTLS: %v", err)
				}
				return
			}
			if Reason(err) != sc.reason || IsRetryable(err) {
				t.Fatalf("want non-retryable %s, got %s: %v", sc.reason, Reason(err), err)
			}
		})
	}
}

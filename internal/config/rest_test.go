package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCA writes a self-signed CA certificate as PEM into dir.
func writeCA(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every REST setting the worker would use is checked with the
// configuration, files included, each error naming its key and value: the
// fleet default, a static inventory cluster's own and a Kubernetes
// cluster's restSecurity entry.
func TestRESTSettingsAreValidatedWithTheConfiguration(t *testing.T) {
	dir := t.TempDir()
	ca := writeCA(t, dir)
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	static := func(rest string) string {
		p := filepath.Join(t.TempDir(), "inventory.yaml")
		body := "tenants: [{name: team-a, root: /user/app/team-a}]\nclusters:\n  - {clusterId: cluster-a, tenant: team-a, mode: session, restUrl: \"https://flink-a:8081\"" + rest + "}\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	load := func(body string) error {
		_, err := Load([]string{"--config", writeFile(t, body)}, envOf(nil), io.Discard)
		return err
	}

	good := "flink:\n  rest:\n    tls: {caFile: " + ca + ", serverName: flink.internal}\n    tokenFile: " + token + "\n    headers: {X-Route: fleet}\n" +
		"inventory:\n  staticFile: " + static(", rest: {tls: {caFile: "+ca+"}}") + "\n"
	if err := load(good); err != nil {
		t.Fatalf("valid REST settings refused: %v", err)
	}
	drill := "drill:\n  clusterRestUrl: https://flink-drill:8081\n  root: /drills\n  rest: {tls: {caFile: " + ca + "}}\n" +
		"  clusters: [{flinkVersion: \"2.3\", restUrl: \"http://flink-drill-2-3:8081\", rest: {tokenFile: " + token + "}}]\nstorage: {writableRoots: [/drills]}\n"
	if err := load(drill); err != nil {
		t.Fatalf("valid drill REST settings refused: %v", err)
	}
	for name, sc := range map[string]struct {
		body string
		want []string
	}{
		"fleet CA file missing": {
			"flink:\n  rest:\n    tls: {caFile: " + missing + "}\n",
			[]string{`flink.rest.tls.caFile="` + missing + `"`, "a readable PEM bundle"},
		},
		"fleet CA file not PEM": {
			"flink:\n  rest:\n    tls: {caFile: " + token + "}\n",
			[]string{`flink.rest.tls.caFile="` + token + `"`, "holds none"},
		},
		"fleet key without certificate": {
			"flink:\n  rest:\n    tls: {keyFile: /etc/tls.key}\n",
			[]string{`flink.rest.tls.certFile=""`, "set both or neither"},
		},
		"every problem at once": {
			"flink:\n  rest:\n    tls: {caFile: " + missing + ", keyFile: tls.key}\n",
			[]string{`flink.rest.tls.caFile="` + missing + `"`, `flink.rest.tls.keyFile="tls.key": want an absolute file path`, `flink.rest.tls.certFile=""`},
		},
		"fleet token file empty": {
			"flink:\n  rest:\n    tokenFile: " + empty + "\n",
			[]string{`flink.rest.tokenFile="` + empty + `"`, "this one is empty"},
		},
		"fleet basic auth and token": {
			"flink:\n  rest:\n    basicAuth: {username: ops, passwordFile: " + token + "}\n    tokenFile: " + token + "\n",
			[]string{`flink.rest.tokenFile="` + token + `"`, "one kind of credentials"},
		},
		"fleet reserved header": {
			"flink:\n  rest:\n    headers: {Authorization: Bearer x}\n",
			[]string{`flink.rest.headers="Authorization"`, "use tokenFile or basicAuth"},
		},
		"static cluster CA file missing": {
			"inventory:\n  staticFile: " + static(", rest: {tls: {caFile: "+missing+"}}") + "\n",
			[]string{"clusters[0].rest.tls.caFile=\"" + missing + "\"", "a readable PEM bundle"},
		},
		"kubernetes cluster token file missing": {
			"inventory:\n  kubernetes:\n    namespaces: [team-a]\n    tenantRootTemplate: /user/app/{namespace}\n    restSecurity:\n      team-a/orders: {tokenFile: " + missing + "}\n",
			[]string{`inventory.kubernetes.restSecurity[team-a/orders].tokenFile="` + missing + `"`, "a readable file"},
		},
		"drill cluster token file missing": {
			"drill:\n  clusterRestUrl: http://flink-drill:8081\n  root: /drills\n  rest: {tokenFile: " + missing + "}\nstorage: {writableRoots: [/drills]}\n",
			[]string{`drill.rest.tokenFile="` + missing + `"`, "a readable file"},
		},
		"drill rest without its cluster": {
			"drill:\n  rest: {headers: {X-Route: drill}}\n",
			[]string{"drill.rest is set but drill.clusterRestUrl is empty"},
		},
		"drill version cluster CA not PEM": {
			"drill:\n  root: /drills\n  clusters: [{flinkVersion: \"2.3\", restUrl: \"https://flink-drill-2-3:8081\", rest: {tls: {caFile: " + token + "}}}]\nstorage: {writableRoots: [/drills]}\n",
			[]string{`drill.clusters[0].rest.tls.caFile="` + token + `"`, "holds none"},
		},
		"kubernetes cluster relative CA": {
			"inventory:\n  kubernetes:\n    namespaces: [team-a]\n    tenantRootTemplate: /user/app/{namespace}\n    restSecurity:\n      team-a/orders: {tls: {caFile: ca.crt}}\n",
			[]string{"restSecurity[team-a/orders].tls.caFile", `"ca.crt"`, "an absolute file path"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := load(sc.body)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range sc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

package inventory

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRESTSecurityMergeKeyByKey(t *testing.T) {
	fleet := RESTSecurity{
		TLS:       RESTTLS{CAFile: "/fleet/ca.crt", CertFile: "/fleet/tls.crt", KeyFile: "/fleet/tls.key", ServerName: "fleet.internal"},
		TokenFile: "/fleet/token",
		Headers:   map[string]string{"X-Route": "fleet", "X-Env": "prod"},
	}
	scenarios := map[string]struct {
		over *RESTSecurity
		want RESTSecurity
	}{
		"nil keeps the default": {nil, fleet},
		"own CA only": {&RESTSecurity{TLS: RESTTLS{CAFile: "/a/ca.crt"}}, RESTSecurity{
			TLS:       RESTTLS{CAFile: "/a/ca.crt", CertFile: "/fleet/tls.crt", KeyFile: "/fleet/tls.key", ServerName: "fleet.internal"},
			TokenFile: "/fleet/token", Headers: map[string]string{"X-Route": "fleet", "X-Env": "prod"},
		}},
		"basic auth replaces the token, a header replaces its namesake in any case": {
			&RESTSecurity{BasicAuth: &RESTBasicAuth{Username: "ops", PasswordFile: "/a/pw"}, Headers: map[string]string{"x-route": "a"}},
			RESTSecurity{TLS: fleet.TLS, BasicAuth: &RESTBasicAuth{Username: "ops", PasswordFile: "/a/pw"}, Headers: map[string]string{"x-route": "a", "X-Env": "prod"}},
		},
		"own client certificate replaces both files": {
			&RESTSecurity{TLS: RESTTLS{CertFile: "/a/tls.crt", KeyFile: "/a/tls.key"}},
			RESTSecurity{TLS: RESTTLS{CAFile: "/fleet/ca.crt", CertFile: "/a/tls.crt", KeyFile: "/a/tls.key", ServerName: "fleet.internal"}, TokenFile: "/fleet/token", Headers: fleet.Headers},
		},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			got := fleet.Merge(sc.over)
			if got.Key() != sc.want.Key() {
				t.Fatalf("merged\n%s\nwant\n%s", got.Key(), sc.want.Key())
			}
		})
	}
	if fleet.Headers["X-Route"] != "fleet" || len(fleet.Headers) != 2 {
		t.Fatalf("Merge changed the default's headers: %v", fleet.Headers)
	}
}

func TestRESTSecurityValidateNamesKeyAndValue(t *testing.T) {
	scenarios := map[string]struct {
		s         RESTSecurity
		key, want string
	}{
		"relative CA":       {RESTSecurity{TLS: RESTTLS{CAFile: "ca.crt"}}, "flink.rest.tls.caFile", "an absolute file path"},
		"cert without key":  {RESTSecurity{TLS: RESTTLS{CertFile: "/x/tls.crt"}}, "flink.rest.tls.keyFile", "set both or neither"},
		"key without cert":  {RESTSecurity{TLS: RESTTLS{KeyFile: "/x/tls.key"}}, "flink.rest.tls.certFile", "set both or neither"},
		"bad server name":   {RESTSecurity{TLS: RESTTLS{ServerName: "https://jm"}}, "flink.rest.tls.serverName", "a DNS name"},
		"user with colon":   {RESTSecurity{BasicAuth: &RESTBasicAuth{Username: "a:b", PasswordFile: "/x/pw"}}, "flink.rest.basicAuth.username", "without ':'"},
		"no password file":  {RESTSecurity{BasicAuth: &RESTBasicAuth{Username: "ops"}}, "flink.rest.basicAuth.passwordFile", "the file holding the password"},
		"basic and token":   {RESTSecurity{BasicAuth: &RESTBasicAuth{Username: "ops", PasswordFile: "/x/pw"}, TokenFile: "/x/t"}, "flink.rest.tokenFile", "one kind of credentials"},
		"authorization hdr": {RESTSecurity{Headers: map[string]string{"Authorization": "Bearer x"}}, "flink.rest.headers", "use tokenFile or basicAuth"},
		"bad header name":   {RESTSecurity{Headers: map[string]string{"X Route": "a"}}, "flink.rest.headers", "a header name"},
		"header line break": {RESTSecurity{Headers: map[string]string{"X-Route": "a\r\nX-Evil: 1"}}, "flink.rest.headers.X-Route", "without line breaks"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			errs := sc.s.Validate("flink.rest")
			if len(errs) != 1 {
				t.Fatalf("want one error, got %v", errs)
			}
			var fe *FieldError
			if !errors.As(errs[0], &fe) || fe.Field != sc.key || !strings.Contains(fe.Valid, sc.want) {
				t.Fatalf("want %s: ...%s..., got %v", sc.key, sc.want, errs[0])
			}
		})
	}
	if errs := (RESTSecurity{TLS: RESTTLS{CAFile: "/x/ca.crt", CertFile: "/x/c", KeyFile: "/x/k", ServerName: "jm.internal"}, TokenFile: "/x/t", Headers: map[string]string{"X-Route": "a"}}).Validate("flink.rest"); len(errs) > 0 {
		t.Fatalf("valid settings refused: %v", errs)
	}
}

func TestRESTSecurityCheckFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notPEM := write("not.pem", "hello")
	empty := write("empty", "  \n")
	twoLines := write("two", "a\nb\n")
	missing := filepath.Join(dir, "missing")
	scenarios := map[string]struct {
		s         RESTSecurity
		key, want string
	}{
		"missing CA":      {RESTSecurity{TLS: RESTTLS{CAFile: missing}}, "c.tls.caFile", "a readable PEM bundle"},
		"CA not PEM":      {RESTSecurity{TLS: RESTTLS{CAFile: notPEM}}, "c.tls.caFile", "this file holds none"},
		"bad key pair":    {RESTSecurity{TLS: RESTTLS{CertFile: notPEM, KeyFile: notPEM}}, "c.tls.certFile", "whose private key is tls.keyFile=" + notPEM},
		"empty token":     {RESTSecurity{TokenFile: empty}, "c.tokenFile", "this one is empty"},
		"two-line token":  {RESTSecurity{TokenFile: twoLines}, "c.tokenFile", "on one line"},
		"missing pw file": {RESTSecurity{BasicAuth: &RESTBasicAuth{Username: "ops", PasswordFile: missing}}, "c.basicAuth.passwordFile", "a readable file"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			errs := sc.s.CheckFiles("c")
			var fe *FieldError
			if len(errs) != 1 || !errors.As(errs[0], &fe) || fe.Field != sc.key || !strings.Contains(fe.Valid, sc.want) {
				t.Fatalf("want one error %s: ...%s..., got %v", sc.key, sc.want, errs)
			}
		})
	}
}

func TestStaticClusterREST(t *testing.T) {
	doc := func(rest string) string {
		return `
tenants: [{name: team-a, root: /user/app/team-a}]
clusters:
  - clusterId: cluster-a
    tenant: team-a
    mode: session
    restUrl: https://flink-a.example:8081
` + rest
	}
	s, err := ParseStatic([]byte(doc(`    rest:
      tls: {caFile: /etc/ca.crt, serverName: flink-a.internal}
      tokenFile: /etc/token
`)), "inv.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Clusters[0].REST
	if r == nil || r.TLS.CAFile != "/etc/ca.crt" || r.TLS.ServerName != "flink-a.internal" || r.TokenFile != "/etc/token" {
		t.Fatalf("rest decoded wrong: %+v", r)
	}
	// Worker-side only: a workflow that records the inventory records none of it.
	b, _ := json.Marshal(s.Clusters[0])
	if strings.Contains(string(b), "ca.crt") || strings.Contains(string(b), "token") {
		t.Fatalf("the REST settings reach the recorded inventory: %s", b)
	}
	_, err = ParseStatic([]byte(doc("    rest: {tls: {caFile: ca.crt}}\n")), "inv.yaml")
	if err == nil || !strings.Contains(err.Error(), `clusters[0].rest.tls.caFile "ca.crt"`) {
		t.Fatalf("a relative CA file: want an error naming clusters[0].rest.tls.caFile, got %v", err)
	}
	_, err = ParseStatic([]byte(strings.Replace(doc("    rest: {tls: {caFile: /etc/ca.crt}}\n"), "https://", "http://", 1)), "inv.yaml")
	if err == nil || !strings.Contains(err.Error(), "clusters[0].restUrl") || !strings.Contains(err.Error(), "rest.tls is set") {
		t.Fatalf("tls with an http URL: want an error naming clusters[0].restUrl, got %v", err)
	}
}

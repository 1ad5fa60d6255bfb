package storage

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

func writeTestFile(t *testing.T, dir, name string, body []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func testKeytab(t *testing.T, dir, name, principal, realm string) string {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(principal, realm, "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return writeTestFile(t, dir, name, b)
}

// CheckKerberos finds every problem of the Kerberos files without a KDC,
// each with the setting it belongs to.
func TestCheckKerberos(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KRB5_CONFIG", "")
	t.Setenv("KRB5CCNAME", "")
	krb5 := writeTestFile(t, dir, "krb5.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n[realms]\n  EXAMPLE.COM = {\n    kdc = 127.0.0.1:9\n  }\n"))
	noKDC := writeTestFile(t, dir, "nokdc.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n"))
	dnsKDC := writeTestFile(t, dir, "dns.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n  dns_lookup_kdc = true\n"))
	worker := testKeytab(t, dir, "worker.keytab", "flinkmaint", "EXAMPLE.COM")
	host := testKeytab(t, dir, "host.keytab", "flinkmaint/host.example.com", "EXAMPLE.COM")
	for name, tc := range map[string]struct {
		opts KerberosOptions
		want map[string]string // field → in its message; nil: valid
	}{
		"keytab of the principal":       {KerberosOptions{Krb5Conf: krb5, Principal: "flinkmaint@EXAMPLE.COM", Keytab: worker}, nil},
		"realm from default_realm":      {KerberosOptions{Krb5Conf: krb5, Principal: "flinkmaint", Keytab: worker}, nil},
		"principal with an instance":    {KerberosOptions{Krb5Conf: krb5, Principal: "flinkmaint/host.example.com@EXAMPLE.COM", Keytab: host}, nil},
		"KDC found by DNS, not checked": {KerberosOptions{Krb5Conf: dnsKDC, Principal: "flinkmaint@EXAMPLE.COM", Keytab: worker}, nil},
		"no krb5.conf": {KerberosOptions{Krb5Conf: filepath.Join(dir, "absent.conf"), Principal: "flinkmaint@EXAMPLE.COM", Keytab: worker},
			map[string]string{"krb5Conf": "absent.conf"}},
		"no KDC of the realm": {KerberosOptions{Krb5Conf: noKDC, Principal: "flinkmaint@EXAMPLE.COM", Keytab: worker},
			map[string]string{"krb5Conf": "names no KDC of realm EXAMPLE.COM"}},
		"keytab of another principal": {KerberosOptions{Krb5Conf: krb5, Principal: "flinkmaint@OTHER.COM", Keytab: worker},
			map[string]string{"keytab": "holds no key of it (it holds keys of flinkmaint@EXAMPLE.COM)", "krb5Conf": "names no KDC of realm OTHER.COM"}},
		"keytab that is missing, and no principal": {KerberosOptions{Krb5Conf: krb5, Keytab: filepath.Join(dir, "absent.keytab")},
			map[string]string{"principal": "required with a keytab", "keytab": "absent.keytab cannot be read"}},
		"keytab that is not one": {KerberosOptions{Krb5Conf: krb5, Principal: "flinkmaint@EXAMPLE.COM", Keytab: krb5},
			map[string]string{"keytab": "krb5.conf cannot be read"}},
		"no ticket cache": {KerberosOptions{Krb5Conf: krb5, CCache: "FILE:" + filepath.Join(dir, "krb5cc_none")},
			map[string]string{"ccache": "no ticket"}},
		"ticket cache of a kind this client cannot read": {KerberosOptions{Krb5Conf: krb5, CCache: "KEYRING:persistent:0"},
			map[string]string{"ccache": "only FILE: caches"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := map[string]string{}
			for _, e := range CheckKerberos(&tc.opts) {
				got[e.Field] += e.Error()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v; want problems of %v", got, tc.want)
			}
			for field, w := range tc.want {
				if !strings.Contains(got[field], w) {
					t.Errorf("%s: %q; want it to say %q", field, got[field], w)
				}
			}
		})
	}
}

// CheckHDFS refuses what NewHDFS refuses before it dials, and NewHDFS
// refuses the same without dialing: one plan serves both.
func TestCheckHDFSMatchesNewHDFS(t *testing.T) {
	dir := t.TempDir()
	krb5 := writeTestFile(t, dir, "krb5.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n[realms]\n  EXAMPLE.COM = {\n    kdc = 127.0.0.1:9\n  }\n"))
	other := testKeytab(t, dir, "other.keytab", "flink", "EXAMPLE.COM")
	privacy := t.TempDir()
	writeTestFile(t, privacy, "hdfs-site.xml", []byte(`<configuration><property><name>dfs.data.transfer.protection</name><value>privacy</value></property></configuration>`))
	// Nothing may be dialed: a listener that counts connections.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialed <- struct{}{}
			c.Close()
		}
	}()
	uri := "hdfs://" + ln.Addr().String()
	for name, tc := range map[string]struct {
		opts HDFSOptions
		want string
		auth bool
	}{
		"no namenode principal": {HDFSOptions{URI: uri, HadoopConfDir: t.TempDir(),
			Kerberos: &KerberosOptions{Krb5Conf: krb5, Principal: "flinkmaint@EXAMPLE.COM", Keytab: testKeytab(t, dir, "w.keytab", "flinkmaint", "EXAMPLE.COM")}}, "namenode principal", false},
		"keytab of another principal": {HDFSOptions{URI: uri, HadoopConfDir: t.TempDir(),
			Kerberos: &KerberosOptions{Krb5Conf: krb5, Principal: "flinkmaint@EXAMPLE.COM", Keytab: other, ServicePrincipal: "nn/_HOST"}}, "holds no key of it", true},
		"privacy data transfer":            {HDFSOptions{URI: uri, HadoopConfDir: privacy, User: "u"}, `dfs.data.transfer.protection="privacy"`, false},
		"no authority and no fs.defaultFS": {HDFSOptions{URI: "hdfs://", HadoopConfDir: t.TempDir(), User: "u"}, "fs.defaultFS", false},
		"too many connections":             {HDFSOptions{URI: uri, HadoopConfDir: t.TempDir(), User: "u", Connections: MaxConnections + 1}, "want 1 to", false},
	} {
		t.Run(name, func(t *testing.T) {
			checked := CheckHDFS(tc.opts)
			if checked == nil || !strings.Contains(checked.Error(), tc.want) {
				t.Fatalf("CheckHDFS = %v; want an error saying %q", checked, tc.want)
			}
			_, started := NewHDFS(context.Background(), tc.opts)
			if started == nil || started.Error() != checked.Error() {
				t.Errorf("NewHDFS = %v; want what CheckHDFS said, %v", started, checked)
			}
			if tc.auth && (!errors.Is(checked, ErrAuthentication) || IsRetryable(checked)) {
				t.Errorf("CheckHDFS = %v; want ErrAuthentication, not retryable", checked)
			}
		})
	}
	if err := CheckHDFS(HDFSOptions{URI: uri, HadoopConfDir: t.TempDir(), User: "u"}); err != nil {
		t.Errorf("CheckHDFS of a usable configuration = %v", err)
	}
	select {
	case <-dialed:
		t.Error("a check dialed the namenode")
	default:
	}
}

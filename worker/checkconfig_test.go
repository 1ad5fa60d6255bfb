package main

import (
	"bytes"
	"context"
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

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// checkFiles writes the files the configurations of these tests name.
type checkFiles struct {
	t   *testing.T
	dir string
}

func (f checkFiles) write(name string, body []byte) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, body, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// keytab writes a keytab holding a key of principal@realm.
func (f checkFiles) keytab(name, principal, realm string) string {
	f.t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(principal, realm, "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		f.t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		f.t.Fatal(err)
	}
	return f.write(name, b)
}

// certPair writes a self-signed certificate and its key, PEM.
func (f checkFiles) certPair(prefix string) (cert, key string) {
	f.t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: prefix},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		f.t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.write(prefix+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		f.write(prefix+".key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// --check-config refuses every configuration the start refuses without
// the network, naming the key and the file, and the start refuses each
// alike (exit 2, Temporal never dialed): both run the same checks.
func TestCheckConfigRefusesWhatTheStartRefuses(t *testing.T) {
	f := checkFiles{t, t.TempDir()}
	// No krb5.conf where the worker would look when krb5Conf is unset.
	t.Setenv("KRB5_CONFIG", filepath.Join(f.dir, "absent-krb5.conf"))
	krb5 := f.write("krb5.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n  dns_lookup_kdc = false\n[realms]\n  EXAMPLE.COM = {\n    kdc = 127.0.0.1:9\n  }\n"))
	noKDC := f.write("nokdc-krb5.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n"))
	workerKeytab := f.keytab("worker.keytab", "flinkmaint", "EXAMPLE.COM")
	otherKeytab := f.keytab("other.keytab", "flink", "EXAMPLE.COM")
	cert, key := f.certPair("client")
	_, otherKey := f.certPair("other")
	notPEM := f.write("not-pem", []byte("this is not a certificate\n"))
	emptyConf := filepath.Join(f.dir, "hadoop-conf")
	if err := os.Mkdir(emptyConf, 0o700); err != nil {
		t.Fatal(err)
	}
	nnPrincipalConf := filepath.Join(f.dir, "hadoop-conf-nn")
	if err := os.Mkdir(nnPrincipalConf, 0o700); err != nil {
		t.Fatal(err)
	}
	f.write("hadoop-conf-nn/hdfs-site.xml", []byte(`<configuration><property><name>dfs.namenode.kerberos.principal</name><value>nn/_HOST@EXAMPLE.COM</value></property></configuration>`))
	kerberos := func(hadoopConf, krb5Conf, principal, keytab string) string {
		s := "storage:\n  hadoopConfDir: " + hadoopConf + "\n  writableRoots: [hdfs://127.0.0.1:9/flinkmaint]\n  kerberos:\n"
		if krb5Conf != "" {
			s += "    krb5Conf: " + krb5Conf + "\n"
		}
		return s + "    principal: " + principal + "\n    keytab: " + keytab + "\n"
	}
	tlsConf := func(certFile, keyFile, caFile string) string {
		return "temporal:\n  tls:\n    certFile: " + certFile + "\n    keyFile: " + keyFile + "\n    caFile: " + caFile + "\n"
	}
	for name, tc := range map[string]struct {
		yaml string
		want []string
	}{
		"kerberos principal and no krb5.conf": {kerberos(nnPrincipalConf, "", "flinkmaint@EXAMPLE.COM", workerKeytab),
			[]string{"storage.kerberos.krb5Conf is empty", "absent-krb5.conf", "$KRB5_CONFIG"}},
		"krb5.conf without the realm's KDC": {kerberos(nnPrincipalConf, noKDC, "flinkmaint@EXAMPLE.COM", workerKeytab),
			[]string{`storage.kerberos.krb5Conf="` + noKDC + `"`, "names no KDC of realm EXAMPLE.COM"}},
		"keytab that does not exist": {kerberos(nnPrincipalConf, krb5, "flinkmaint@EXAMPLE.COM", filepath.Join(f.dir, "absent.keytab")),
			[]string{`storage.kerberos.keytab="` + filepath.Join(f.dir, "absent.keytab") + `"`, "cannot be read"}},
		"keytab that cannot be read": {kerberos(nnPrincipalConf, krb5, "flinkmaint@EXAMPLE.COM", f.dir),
			[]string{`storage.kerberos.keytab="` + f.dir + `"`, "cannot be read"}},
		"keytab that is not one": {kerberos(nnPrincipalConf, krb5, "flinkmaint@EXAMPLE.COM", notPEM),
			[]string{`storage.kerberos.keytab="` + notPEM + `"`, "cannot be read"}},
		"keytab of another principal": {kerberos(nnPrincipalConf, krb5, "flinkmaint@EXAMPLE.COM", otherKeytab),
			[]string{`storage.kerberos.keytab="` + otherKeytab + `"`, "flinkmaint@EXAMPLE.COM", "holds no key of it", "keys of flink@EXAMPLE.COM"}},
		"no namenode principal": {kerberos(emptyConf, krb5, "flinkmaint@EXAMPLE.COM", workerKeytab),
			[]string{`storage.writableRoots[0]="hdfs://127.0.0.1:9/flinkmaint"`, "namenode principal", "dfs.namenode.kerberos.principal"}},
		"TLS certificate missing": {tlsConf(filepath.Join(f.dir, "absent.crt"), key, cert),
			[]string{`temporal.tls.certFile="` + filepath.Join(f.dir, "absent.crt") + `" cannot be read`}},
		"TLS key of another certificate": {tlsConf(cert, otherKey, cert),
			[]string{`temporal.tls.certFile="` + cert + `" and temporal.tls.keyFile="` + otherKey + `" are not a PEM client certificate and its private key`}},
		"TLS certificate not PEM": {tlsConf(notPEM, key, cert),
			[]string{`temporal.tls.certFile="` + notPEM + `"`, "not a PEM client certificate"}},
		"TLS CA not PEM": {tlsConf(cert, key, notPEM),
			[]string{`temporal.tls.caFile="` + notPEM + `" holds no PEM certificate`}},
		"TLS CA missing": {"temporal:\n  tls:\n    caFile: " + filepath.Join(f.dir, "absent-ca.crt") + "\n",
			[]string{`temporal.tls.caFile="` + filepath.Join(f.dir, "absent-ca.crt") + `" cannot be read`}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := f.write(strings.ReplaceAll(name, " ", "-")+".yaml", []byte(tc.yaml))
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"--check-config", "--config", cfg}, noEnv, io.Discard, &stderr)
			out := stderr.String()
			if code != exitConfig {
				t.Fatalf("--check-config: exit code %d, want %d; stderr:\n%s", code, exitConfig, out)
			}
			for _, w := range append(tc.want, "config file "+cfg) {
				if !strings.Contains(out, w) {
					t.Errorf("--check-config: stderr does not mention %q:\n%s", w, out)
				}
			}

			stderr.Reset()
			code = run(context.Background(), []string{"--config", cfg, "--temporal-address", "127.0.0.1:1",
				"--temporal-connect-timeout", "30s", "--http-listen", "", "--log-format", "console"}, noEnv, io.Discard, &stderr)
			out = strings.ReplaceAll(stderr.String(), `\"`, `"`) // the log quotes the error
			if code != exitConfig || !strings.Contains(out, tc.want[0]) {
				t.Errorf("start: exit code %d, want %d naming %q; stderr:\n%s", code, exitConfig, tc.want[0], out)
			}
			if strings.Contains(out, "127.0.0.1:1") {
				t.Errorf("start: the worker tried Temporal before refusing its configuration:\n%s", out)
			}
		})
	}
}

// --check-config also reads what runs read later (the static inventory),
// passes a configuration whose files are all usable without reaching
// anything, and says what it left to the start.
func TestCheckConfigReadsFilesAndSaysWhatItLeaves(t *testing.T) {
	f := checkFiles{t, t.TempDir()}
	krb5 := f.write("krb5.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n[realms]\n  EXAMPLE.COM = {\n    kdc = 127.0.0.1:9\n  }\n"))
	workerKeytab := f.keytab("worker.keytab", "flinkmaint", "EXAMPLE.COM")
	cert, key := f.certPair("client")
	badInventory := f.write("inventory.yaml", []byte("clusters: 5\n"))
	good := "temporal:\n  address: 127.0.0.1:1\n  tls:\n    certFile: " + cert + "\n    keyFile: " + key + "\n    caFile: " + cert + "\n" +
		"storage:\n  writableRoots: [hdfs://127.0.0.1:9/flinkmaint]\n  kerberos:\n    krb5Conf: " + krb5 + "\n    principal: flinkmaint@EXAMPLE.COM\n    keytab: " + workerKeytab + "\n    servicePrincipal: nn/_HOST\n"

	cfg := f.write("good.yaml", []byte(good))
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--check-config", "--config", cfg}, noEnv, &stdout, &stderr); code != exitOK || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %s; want the configuration passed", code, stderr.String())
	}
	for _, w := range []string{"configuration valid: Temporal 127.0.0.1:1", "config file " + cfg, "not checked", "reaching Temporal", "KDC", "HDFS NameNodes"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout does not say %q:\n%s", w, stdout.String())
		}
	}

	cfg = f.write("bad-inventory.yaml", []byte(good+"inventory:\n  staticFile: "+badInventory+"\n"))
	stderr.Reset()
	if code := run(context.Background(), []string{"--check-config", "--config", cfg}, noEnv, io.Discard, &stderr); code != exitConfig ||
		!strings.Contains(stderr.String(), `inventory.staticFile="`+badInventory+`"`) || !strings.Contains(stderr.String(), "config file "+cfg) {
		t.Errorf("exit code %d, stderr %s; want %d naming inventory.staticFile and the file", code, stderr.String(), exitConfig)
	}
}

// -h lists the flags that choose what the worker does with the others.
func TestHelpListsModeFlags(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, noEnv, io.Discard, &stderr); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	for _, w := range []string{"-check-config", "-version", "-config", "-shutdown-timeout duration"} {
		if !strings.Contains(stderr.String(), "  "+w) {
			t.Errorf("--help does not list %s:\n%s", w, stderr.String())
		}
	}
}

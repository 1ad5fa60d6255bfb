package inventory

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// RESTSecurity is how the worker reaches a Flink REST endpoint that is
// not plain, open http: TLS (Flink's security.ssl.rest.*) and credentials
// for a gateway in front of it. Secrets come from files (mounted Secrets),
// never from this text. The worker's flink.rest is the fleet default; a
// cluster's own settings override it key by key (a cluster that sets
// basicAuth or tokenFile replaces the default's credentials, one that sets
// certFile or keyFile the default's client certificate).
//
// The settings live on the worker only: they are not part of the
// inventory a workflow records.
type RESTSecurity struct {
	// TLS verifies the endpoint's certificate and presents a client
	// certificate; used with https:// REST URLs.
	TLS RESTTLS `yaml:"tls,omitempty" json:"tls,omitempty"`
	// BasicAuth sends a user name and the password of a file.
	BasicAuth *RESTBasicAuth `yaml:"basicAuth,omitempty" json:"basicAuth,omitempty"`
	// TokenFile holds a bearer token sent as "Authorization: Bearer
	// <token>"; the file is read again whenever it changes, so a rotated
	// Secret takes effect without a restart. Exclusive with basicAuth.
	TokenFile string `yaml:"tokenFile,omitempty" json:"tokenFile,omitempty"`
	// Headers are sent with every request, such as a gateway's routing
	// header; not for secrets (use tokenFile or basicAuth).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// RESTTLS configures TLS to a Flink REST endpoint.
type RESTTLS struct {
	// CAFile is a PEM bundle of the CAs that sign the endpoint's
	// certificate (the certificate of Flink's security.ssl.rest.truststore);
	// empty trusts the system roots.
	CAFile string `yaml:"caFile,omitempty" json:"caFile,omitempty"`
	// CertFile is the PEM client certificate the endpoint asks for when
	// Flink's security.ssl.rest.authentication-enabled is true; with
	// keyFile.
	CertFile string `yaml:"certFile,omitempty" json:"certFile,omitempty"`
	// KeyFile is the PEM private key of certFile.
	KeyFile string `yaml:"keyFile,omitempty" json:"keyFile,omitempty"`
	// ServerName is the name checked in the endpoint's certificate when
	// it is not the REST URL's host (an IP address, an alias).
	ServerName string `yaml:"serverName,omitempty" json:"serverName,omitempty"`
}

// RESTBasicAuth is a user name and the file holding its password.
type RESTBasicAuth struct {
	// Username is sent as is; it must not contain ':'.
	Username string `yaml:"username" json:"username"`
	// PasswordFile holds the password (surrounding white space is
	// dropped); read again whenever it changes.
	PasswordFile string `yaml:"passwordFile" json:"passwordFile"`
}

// IsZero reports whether nothing is set.
func (s RESTSecurity) IsZero() bool {
	return s.TLS == RESTTLS{} && s.BasicAuth == nil && s.TokenFile == "" && len(s.Headers) == 0
}

// Merge returns s overridden by o key by key: a key o sets wins, a key it
// leaves empty keeps s's. Credentials (basicAuth, tokenFile) and the
// client certificate (certFile, keyFile) go as a pair: o setting either
// replaces both. Headers merge name by name. A nil o returns s.
func (s RESTSecurity) Merge(o *RESTSecurity) RESTSecurity {
	out := s
	out.Headers = nil
	for k, v := range s.Headers {
		out.setHeader(k, v)
	}
	if o == nil {
		return out
	}
	if o.TLS.CAFile != "" {
		out.TLS.CAFile = o.TLS.CAFile
	}
	if o.TLS.ServerName != "" {
		out.TLS.ServerName = o.TLS.ServerName
	}
	if o.TLS.CertFile != "" || o.TLS.KeyFile != "" {
		out.TLS.CertFile, out.TLS.KeyFile = o.TLS.CertFile, o.TLS.KeyFile
	}
	if o.BasicAuth != nil || o.TokenFile != "" {
		out.BasicAuth, out.TokenFile = nil, o.TokenFile
		if o.BasicAuth != nil {
			b := *o.BasicAuth
			out.BasicAuth = &b
		}
	}
	for k, v := range o.Headers {
		out.setHeader(k, v)
	}
	return out
}

// setHeader sets a header, replacing one of the same name in any case.
func (s *RESTSecurity) setHeader(name, value string) {
	if s.Headers == nil {
		s.Headers = map[string]string{}
	}
	for k := range s.Headers {
		if strings.EqualFold(k, name) {
			delete(s.Headers, k)
		}
	}
	s.Headers[name] = value
}

// Key is a string that differs whenever the settings differ, for caches.
func (s RESTSecurity) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ca=%q cert=%q key=%q sn=%q token=%q", s.TLS.CAFile, s.TLS.CertFile, s.TLS.KeyFile, s.TLS.ServerName, s.TokenFile)
	if s.BasicAuth != nil {
		fmt.Fprintf(&b, " basic=%q:%q", s.BasicAuth.Username, s.BasicAuth.PasswordFile)
	}
	names := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, " h%q=%q", k, s.Headers[k])
	}
	return b.String()
}

// reservedHeaders are set by the client itself.
var reservedHeaders = map[string]string{
	"authorization":  "use tokenFile or basicAuth",
	"host":           "the REST URL's host is sent",
	"content-type":   "the client sets it per request",
	"content-length": "the client sets it per request",
	"user-agent":     "the worker names itself",
	"accept":         "the client asks for JSON",
}

// Validate checks the settings without reading files; field prefixes every
// key it names, such as "flink.rest" or "clusters[2].rest".
func (s RESTSecurity) Validate(field string) []error {
	var errs []error
	bad := func(key, value, valid string) {
		errs = append(errs, &FieldError{Field: field + "." + key, Value: value, Valid: valid})
	}
	path := func(key, v string) {
		if v != "" && !isFilePath(v) {
			bad(key, v, "an absolute file path, such as /etc/flinkmaint/flink-rest/"+sampleFile[key])
		}
	}
	path("tls.caFile", s.TLS.CAFile)
	path("tls.certFile", s.TLS.CertFile)
	path("tls.keyFile", s.TLS.KeyFile)
	path("tokenFile", s.TokenFile)
	if (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		if s.TLS.CertFile == "" {
			bad("tls.certFile", "", "the client certificate of tls.keyFile="+s.TLS.KeyFile+": set both or neither")
		} else {
			bad("tls.keyFile", "", "the private key of tls.certFile="+s.TLS.CertFile+": set both or neither")
		}
	}
	if sn := s.TLS.ServerName; sn != "" && (strings.ContainsAny(sn, " /:\t\n") || len(sn) > 253) {
		bad("tls.serverName", sn, "a DNS name of the endpoint's certificate, such as flink-rest.team-a.svc")
	}
	if b := s.BasicAuth; b != nil {
		if b.Username == "" || strings.ContainsAny(b.Username, ":\r\n") {
			bad("basicAuth.username", b.Username, "a user name without ':' or line breaks")
		}
		if b.PasswordFile == "" {
			bad("basicAuth.passwordFile", "", "the file holding the password (a mounted Secret)")
		}
		path("basicAuth.passwordFile", b.PasswordFile)
		if s.TokenFile != "" {
			bad("tokenFile", s.TokenFile, "empty when basicAuth is set: use one kind of credentials")
		}
	}
	names := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := s.Headers[k]
		switch why, reserved := reservedHeaders[strings.ToLower(k)]; {
		case !isToken(k):
			bad("headers", k, "a header name of letters, digits and !#$%&'*+-.^_`|~")
		case reserved:
			bad("headers", k, "another header: "+why)
		case strings.ContainsAny(v, "\r\n\x00"):
			bad("headers."+k, v, "a value without line breaks or NUL")
		}
	}
	return errs
}

// sampleFile names a sample file of each file key, for error messages.
var sampleFile = map[string]string{
	"tls.caFile": "ca.crt", "tls.certFile": "tls.crt", "tls.keyFile": "tls.key",
	"tokenFile": "token", "basicAuth.passwordFile": "password",
}

// isFilePath reports whether v is an absolute path a file can have.
func isFilePath(v string) bool {
	return filepath.IsAbs(v) && !strings.ContainsAny(v, "\n\x00")
}

// CheckFiles reads every file the settings name and says what is wrong
// with each, naming its key: a CA bundle without a certificate, a key pair
// that does not load, an empty token or password. A path Validate refuses
// is not read.
func (s RESTSecurity) CheckFiles(field string) []error {
	var errs []error
	bad := func(key, value, valid string) {
		errs = append(errs, &FieldError{Field: field + "." + key, Value: value, Valid: valid})
	}
	if f := s.TLS.CAFile; isFilePath(f) {
		if pem, err := os.ReadFile(f); err != nil {
			bad("tls.caFile", f, fmt.Sprintf("a readable PEM bundle of CA certificates (%v)", err))
		} else if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			bad("tls.caFile", f, "a PEM bundle of CA certificates (-----BEGIN CERTIFICATE-----); this file holds none")
		}
	}
	if isFilePath(s.TLS.CertFile) && isFilePath(s.TLS.KeyFile) {
		if _, err := tls.LoadX509KeyPair(s.TLS.CertFile, s.TLS.KeyFile); err != nil {
			bad("tls.certFile", s.TLS.CertFile, fmt.Sprintf("a PEM client certificate whose private key is tls.keyFile=%s (%v)", s.TLS.KeyFile, err))
		}
	}
	secret := func(key, f string) {
		if !isFilePath(f) {
			return
		}
		b, err := os.ReadFile(f)
		switch {
		case err != nil:
			bad(key, f, fmt.Sprintf("a readable file (%v)", err))
		case strings.TrimSpace(string(b)) == "":
			bad(key, f, "a file holding the secret; this one is empty")
		case strings.ContainsAny(strings.TrimSpace(string(b)), "\r\n"):
			bad(key, f, "a file holding the secret on one line")
		}
	}
	secret("tokenFile", s.TokenFile)
	if s.BasicAuth != nil {
		secret("basicAuth.passwordFile", s.BasicAuth.PasswordFile)
	}
	return errs
}

// isToken reports whether s is an HTTP token (RFC 9110), as header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

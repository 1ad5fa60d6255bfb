package flink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/redact"
)

// Defaults applied by New when the option is zero.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultPollInterval   = time.Second
	DefaultUserAgent      = "flinkmaint-flink-client"
)

// Options configure a Client. Only BaseURL is required.
type Options struct {
	// BaseURL of the REST endpoint, optionally with a path prefix when the
	// API sits behind an ingress: "https://gw/flink/cluster-a/".
	BaseURL string
	// RequestTimeout bounds each HTTP request (not a whole poll loop).
	RequestTimeout time.Duration
	// PollInterval between status requests while awaiting an operation.
	PollInterval time.Duration
	// UserAgent header value.
	UserAgent string
	// TLS settings for https base URLs.
	TLS TLSOptions
	// BasicAuth and BearerToken (or BearerTokenFile) are mutually
	// exclusive.
	BasicAuth   *BasicAuth
	BearerToken string
	// BearerTokenFile holds the bearer token instead of BearerToken. It is
	// read again whenever its size or modification time changes, so a
	// rotated Secret takes effect on the next request.
	BearerTokenFile string
	// Headers are added to every request.
	Headers map[string]string
	// Cluster names the endpoint's cluster in TLS errors, such as
	// "team-a/orders"; empty: the errors name the URL only.
	Cluster string
	// Transport replaces the HTTP transport (TLS options are then ignored
	// and must be nil/zero); useful for proxies or instrumentation.
	Transport http.RoundTripper
}

// TLSOptions configure server verification and client certificates.
type TLSOptions struct {
	// CAFile is a PEM bundle trusted in addition to nothing else: when set,
	// the system roots are not used.
	CAFile string
	// CertFile and KeyFile hold a PEM client certificate and key; both or
	// neither.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server certificate.
	ServerName string
	// InsecureSkipVerify disables server verification (tests only).
	InsecureSkipVerify bool
}

func (t TLSOptions) isZero() bool { return t == TLSOptions{} }

// BasicAuth credentials. PasswordFile, instead of Password, is read
// again whenever it changes.
type BasicAuth struct {
	Username, Password string
	PasswordFile       string
}

// OptionsError reports an invalid option, naming the field.
type OptionsError struct {
	Field, Value, Problem string
	Err                   error
}

func (e *OptionsError) Error() string {
	msg := fmt.Sprintf("flink: invalid option %s", e.Field)
	if e.Value != "" {
		msg += fmt.Sprintf(" %q", e.Value)
	}
	msg += ": " + e.Problem
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *OptionsError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidArgument) true for option errors.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidArgument }

// Validate checks the options without touching the network; it does read
// the TLS files.
func (o Options) Validate() error {
	_, err := o.baseURL()
	if err != nil {
		return err
	}
	_, err = o.tlsConfig()
	if err != nil {
		return err
	}
	return o.validateRest()
}

func (o Options) validateRest() error {
	if o.RequestTimeout < 0 {
		return &OptionsError{Field: "RequestTimeout", Value: o.RequestTimeout.String(), Problem: "must be positive, or zero for the default " + DefaultRequestTimeout.String()}
	}
	if o.PollInterval < 0 {
		return &OptionsError{Field: "PollInterval", Value: o.PollInterval.String(), Problem: "must be positive, or zero for the default " + DefaultPollInterval.String()}
	}
	if strings.ContainsAny(o.UserAgent, "\r\n") {
		return &OptionsError{Field: "UserAgent", Value: o.UserAgent, Problem: "must not contain line breaks"}
	}
	if o.BasicAuth != nil && (o.BearerToken != "" || o.BearerTokenFile != "") {
		return &OptionsError{Field: "BasicAuth/BearerToken", Problem: "set at most one of them"}
	}
	if o.BearerToken != "" && o.BearerTokenFile != "" {
		return &OptionsError{Field: "BearerToken/BearerTokenFile", Problem: "set at most one of them"}
	}
	if o.BasicAuth != nil && o.BasicAuth.Password != "" && o.BasicAuth.PasswordFile != "" {
		return &OptionsError{Field: "BasicAuth.Password/BasicAuth.PasswordFile", Problem: "set at most one of them"}
	}
	for k, v := range o.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return &OptionsError{Field: "Headers", Value: k, Problem: "is not a header name"}
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return &OptionsError{Field: "Headers[" + k + "]", Problem: "must not contain line breaks or NUL"}
		}
	}
	if o.BasicAuth != nil {
		if o.BasicAuth.Username == "" {
			return &OptionsError{Field: "BasicAuth.Username", Problem: "must not be empty"}
		}
		if strings.Contains(o.BasicAuth.Username, ":") {
			return &OptionsError{Field: "BasicAuth.Username", Value: o.BasicAuth.Username, Problem: "must not contain ':'"}
		}
	}
	if strings.ContainsAny(o.BearerToken, "\r\n ") {
		return &OptionsError{Field: "BearerToken", Problem: "must not contain spaces or line breaks"}
	}
	if o.Transport != nil && !o.TLS.isZero() {
		return &OptionsError{Field: "TLS", Problem: "cannot be combined with Transport; configure TLS on the transport"}
	}
	return nil
}

func (o Options) baseURL() (*url.URL, error) {
	if strings.TrimSpace(o.BaseURL) == "" {
		return nil, &OptionsError{Field: "BaseURL", Problem: "is required, e.g. http://jobmanager:8081/ or https://gw/flink/cluster-a/"}
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil {
		// url.Error repeats the whole URL, credentials and all.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &OptionsError{Field: "BaseURL", Value: redact.URL(o.BaseURL), Problem: "is not a URL", Err: err}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &OptionsError{Field: "BaseURL", Value: u.Redacted(), Problem: "scheme must be http or https"}
	}
	if u.Host == "" {
		return nil, &OptionsError{Field: "BaseURL", Value: u.Redacted(), Problem: "has no host"}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, &OptionsError{Field: "BaseURL", Value: u.Redacted(), Problem: "must not have a query or fragment"}
	}
	if u.User != nil {
		return nil, &OptionsError{Field: "BaseURL", Value: u.Redacted(), Problem: "must not carry credentials; use BasicAuth"}
	}
	if !o.TLS.isZero() && u.Scheme != "https" {
		return nil, &OptionsError{Field: "TLS", Problem: "is set but BaseURL " + o.BaseURL + " is not https"}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

func (o Options) tlsConfig() (*tls.Config, error) {
	t := o.TLS
	if t.isZero() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in for tests
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &OptionsError{Field: "TLS.CAFile", Value: t.CAFile, Problem: "cannot be read", Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &OptionsError{Field: "TLS.CAFile", Value: t.CAFile, Problem: "holds no PEM certificate"}
		}
		cfg.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, &OptionsError{Field: "TLS.CertFile/TLS.KeyFile", Problem: "set both or neither"}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &OptionsError{Field: "TLS.CertFile/TLS.KeyFile", Value: t.CertFile, Problem: "cannot load the key pair", Err: err}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// restCipherSuites are the TLS 1.2 cipher suites offered to a REST
// endpoint: Go's defaults (every ECDHE suite), then the one Flink's
// security.ssl.algorithms names by default, TLS_RSA_WITH_AES_128_CBC_SHA.
// Go no longer offers RSA key exchange unless asked, so without it a
// JobManager on Flink's default SSL settings fails every handshake. A
// server that allows an ECDHE suite still gets one; TLS 1.3 is unaffected.
func restCipherSuites() []uint16 {
	var out []uint16
	for _, cs := range tls.CipherSuites() {
		if strings.HasPrefix(cs.Name, "TLS_ECDHE_") {
			out = append(out, cs.ID)
		}
	}
	return append(out, tls.TLS_RSA_WITH_AES_128_CBC_SHA)
}

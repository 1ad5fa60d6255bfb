// Package temporalconn turns connection settings shared by the worker and the
// operator CLI into a Temporal client: address, namespace, TLS and API key.
package temporalconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// Environment variables, named as the Temporal CLI and SDK env config name them.
const (
	EnvAddress       = "TEMPORAL_ADDRESS"
	EnvNamespace     = "TEMPORAL_NAMESPACE"
	EnvAPIKey        = "TEMPORAL_API_KEY"
	EnvTLS           = "TEMPORAL_TLS"
	EnvTLSCert       = "TEMPORAL_TLS_CLIENT_CERT_PATH"
	EnvTLSKey        = "TEMPORAL_TLS_CLIENT_KEY_PATH"
	EnvTLSCA         = "TEMPORAL_TLS_SERVER_CA_CERT_PATH"
	EnvTLSServerName = "TEMPORAL_TLS_SERVER_NAME"
	EnvUIURL         = "TEMPORAL_UI_URL"
)

// Defaults point at the embedded dev server started by `make temporal`.
const (
	DefaultAddress   = "localhost:7233"
	DefaultNamespace = "default"
	DefaultUIURL     = "http://localhost:8233"
)

// Options are the settings of the connection to Temporal, shared by the
// worker (its temporal key) and the CLI (its flags).
type Options struct {
	// Address is the Temporal frontend, host:port.
	Address string `yaml:"address"`
	// Namespace is the Temporal namespace every run lives in.
	Namespace string `yaml:"namespace"`
	// APIKey authenticates to Temporal Cloud (or a server that takes API
	// keys); it implies TLS.
	APIKey string `yaml:"apiKey"`
	// TLS to the frontend: server-verified, or mutual with a client pair.
	TLS TLSOptions `yaml:"tls"`
	// UIURL is the Web UI base used to print links to executions.
	UIURL string `yaml:"uiURL"`
}

// TLSOptions configure mutual TLS or server-verified TLS.
type TLSOptions struct {
	// Enabled turns TLS on with the system's roots; a client certificate,
	// a CA or an API key turn it on too.
	Enabled bool `yaml:"enabled"`
	// CertFile is the client certificate of mutual TLS (PEM), with keyFile.
	CertFile string `yaml:"certFile"`
	// KeyFile is the private key of certFile (PEM).
	KeyFile string `yaml:"keyFile"`
	// CAFile is the CA of the server's certificate (PEM); empty: the
	// system's roots.
	CAFile string `yaml:"caFile"`
	// ServerName is the name to verify in the server's certificate;
	// empty: the host of temporal.address.
	ServerName string `yaml:"serverName"`
}

// ApplyDefaults fills empty fields.
func (o *Options) ApplyDefaults() {
	if o.Address == "" {
		o.Address = DefaultAddress
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.UIURL == "" {
		o.UIURL = DefaultUIURL
	}
}

// ApplyEnv overrides fields from TEMPORAL_* variables that are set.
func (o *Options) ApplyEnv(getenv func(string) string) error {
	set := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	set(&o.Address, EnvAddress)
	set(&o.Namespace, EnvNamespace)
	set(&o.APIKey, EnvAPIKey)
	set(&o.TLS.CertFile, EnvTLSCert)
	set(&o.TLS.KeyFile, EnvTLSKey)
	set(&o.TLS.CAFile, EnvTLSCA)
	set(&o.TLS.ServerName, EnvTLSServerName)
	set(&o.UIURL, EnvUIURL)
	if v := getenv(EnvTLS); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q is not valid: use true or false", EnvTLS, v)
		}
		o.TLS.Enabled = b
	}
	return nil
}

// Validate checks the options. name gives what the user calls a field,
// from its YAML key ("address", "tls.certFile"): a config key or a flag.
func (o *Options) Validate(name func(key string) string) []error {
	var errs []error
	if o.Address == "" {
		errs = append(errs, fmt.Errorf("%s is empty: set host:port of the Temporal frontend", name("address")))
	} else if _, port, err := net.SplitHostPort(o.Address); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("%s=%q is not host:port of the Temporal frontend (such as %s)", name("address"), o.Address, DefaultAddress))
	}
	if o.Namespace == "" {
		errs = append(errs, fmt.Errorf("%s is empty: set a Temporal namespace", name("namespace")))
	}
	if (o.TLS.CertFile == "") != (o.TLS.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s=%q and %s=%q: set both for mutual TLS or neither", name("tls.certFile"), o.TLS.CertFile, name("tls.keyFile"), o.TLS.KeyFile))
	}
	if _, tlsErrs := o.tlsConfig(name); len(tlsErrs) > 0 {
		errs = append(errs, tlsErrs...)
	}
	return errs
}

// tlsConfig reads the TLS files as a dial uses them, so Validate refuses
// a file the connection could not use (missing, unreadable, not PEM, a
// key that is not the certificate's) naming its key through name.
func (o *Options) tlsConfig(name func(key string) string) (*tls.Config, []error) {
	usesTLS := o.TLS.Enabled || o.TLS.CertFile != "" || o.TLS.CAFile != "" || o.APIKey != ""
	if !usesTLS && o.TLS.KeyFile == "" {
		return nil, nil
	}
	var errs []error
	read := func(key, path string) []byte {
		if path == "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q cannot be read: %v", name(key), path, err))
		}
		return b
	}
	cert, key, ca := read("tls.certFile", o.TLS.CertFile), read("tls.keyFile", o.TLS.KeyFile), read("tls.caFile", o.TLS.CAFile)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLS.ServerName}
	if cert != nil && key != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q and %s=%q are not a PEM client certificate and its private key: %v",
				name("tls.certFile"), o.TLS.CertFile, name("tls.keyFile"), o.TLS.KeyFile, err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			errs = append(errs, fmt.Errorf("%s=%q holds no PEM certificate: use the CA certificate (PEM) that signed the frontend's certificate", name("tls.caFile"), o.TLS.CAFile))
		}
		cfg.RootCAs = pool
	}
	if len(errs) > 0 || !usesTLS {
		return nil, errs
	}
	return cfg, nil
}

// ErrUnreachable marks a failure to connect to the Temporal frontend.
var ErrUnreachable = errors.New("temporal frontend unreachable")

// ClientOptions builds SDK client options; logger and metrics may be nil.
func (o *Options) ClientOptions(logger log.Logger, metrics client.MetricsHandler) (client.Options, error) {
	tlsCfg, errs := o.tlsConfig(func(key string) string { return key })
	if len(errs) > 0 {
		return client.Options{}, fmt.Errorf("temporal TLS: %w", errors.Join(errs...))
	}
	opts := client.Options{
		HostPort:          o.Address,
		Namespace:         o.Namespace,
		Logger:            logger,
		MetricsHandler:    metrics,
		ConnectionOptions: client.ConnectionOptions{TLS: tlsCfg},
		DataConverter:     DataConverter(),
	}
	if o.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(o.APIKey)
	}
	return opts, nil
}

// dialCause explains a failed dial in the user's terms where gRPC does
// not: a host name that does not resolve reads "no children to pick from".
func dialCause(ctx context.Context, lookup func(context.Context, string) ([]string, error), address string, err error) error {
	host, _, splitErr := net.SplitHostPort(address)
	if splitErr != nil || net.ParseIP(host) != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, lookupErr := lookup(ctx, host); lookupErr != nil {
		var dnsErr *net.DNSError
		if errors.As(lookupErr, &dnsErr) && dnsErr.IsNotFound {
			return fmt.Errorf("the host name %q does not resolve (%v): check the address", host, lookupErr)
		}
	}
	return err
}

// Dial connects and checks the frontend answers within timeout. Connection
// failures wrap ErrUnreachable so callers can choose their exit code.
func (o *Options) Dial(ctx context.Context, timeout time.Duration, logger log.Logger, metrics client.MetricsHandler) (client.Client, error) {
	opts, err := o.ClientOptions(logger, metrics)
	if err != nil {
		return nil, err
	}
	dialCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.DialContext(dialCtx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot connect to %s (namespace %q) within %s: %v", ErrUnreachable, o.Address, o.Namespace, timeout, dialCause(ctx, net.DefaultResolver.LookupHost, o.Address, err))
	}
	return c, nil
}

// ExecutionURL returns the Web UI link of a workflow execution.
func (o *Options) ExecutionURL(workflowID, runID string) string {
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", strings.TrimRight(o.UIURL, "/"),
		url.PathEscape(o.Namespace), url.PathEscape(workflowID), url.PathEscape(runID))
}

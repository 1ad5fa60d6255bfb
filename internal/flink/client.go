package flink

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Client talks to one Flink REST endpoint. It is safe for concurrent use.
type Client struct {
	base           *url.URL
	http           *http.Client
	requestTimeout time.Duration
	pollInterval   time.Duration
	userAgent      string
	// auth returns the Authorization header, "" for none.
	auth    func() (string, error)
	headers map[string]string
	// cluster, caFile and certFile describe the endpoint in TLS errors.
	cluster, caFile, certFile, serverName string
}

// New validates opts and returns a Client.
func New(opts Options) (*Client, error) {
	base, err := opts.baseURL()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	if err := opts.validateRest(); err != nil {
		return nil, err
	}
	transport := opts.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if base.Scheme == "https" {
			if tlsCfg == nil {
				tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
			}
			tlsCfg.CipherSuites = restCipherSuites()
		}
		if tlsCfg != nil {
			t.TLSClientConfig = tlsCfg
		}
		transport = t
	}
	c := &Client{
		base: base,
		// Redirects are not followed blindly: a redirect to a login page
		// would otherwise surface as malformed JSON.
		http: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		requestTimeout: opts.RequestTimeout,
		pollInterval:   opts.PollInterval,
		userAgent:      opts.UserAgent,
	}
	if c.requestTimeout == 0 {
		c.requestTimeout = DefaultRequestTimeout
	}
	if c.pollInterval == 0 {
		c.pollInterval = DefaultPollInterval
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	c.auth = authHeader(opts)
	c.headers = opts.Headers
	c.cluster, c.caFile, c.certFile, c.serverName = opts.Cluster, opts.TLS.CAFile, opts.TLS.CertFile, opts.TLS.ServerName
	return c, nil
}

// authHeader returns the function giving the Authorization header of opts.
func authHeader(opts Options) func() (string, error) {
	basic := func(user, password string) string {
		r := &http.Request{Header: http.Header{}}
		r.SetBasicAuth(user, password)
		return r.Header.Get("Authorization")
	}
	switch {
	case opts.BasicAuth != nil && opts.BasicAuth.PasswordFile != "":
		user, f := opts.BasicAuth.Username, &secretFile{path: opts.BasicAuth.PasswordFile}
		return func() (string, error) {
			p, err := f.get()
			if err != nil {
				return "", err
			}
			return basic(user, p), nil
		}
	case opts.BasicAuth != nil:
		h := basic(opts.BasicAuth.Username, opts.BasicAuth.Password)
		return func() (string, error) { return h, nil }
	case opts.BearerTokenFile != "":
		f := &secretFile{path: opts.BearerTokenFile}
		return func() (string, error) {
			t, err := f.get()
			if err != nil {
				return "", err
			}
			return "Bearer " + t, nil
		}
	case opts.BearerToken != "":
		h := "Bearer " + opts.BearerToken
		return func() (string, error) { return h, nil }
	}
	return func() (string, error) { return "", nil }
}

// BaseURL returns the endpoint the client talks to, without a trailing slash.
func (c *Client) BaseURL() string { return c.base.String() }

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func checkID(op, field, v string) error {
	if !hex32.MatchString(v) {
		return invalidArgument(op, "%s %q is not a 32-character lowercase hex string", field, v)
	}
	return nil
}

// request describes one REST call.
type request struct {
	op string
	ep endpoint
	// args fill the {placeholders} of ep.path in order; each is escaped.
	args  []string
	query url.Values
	// body is JSON-encoded unless it is a rawBody.
	body any
	// accepted lists success statuses; empty means any 2xx.
	accepted []int
	// notFound is the reason for a Flink JSON 404 whose text matched
	// nothing specific (e.g. job endpoints: job not found).
	notFound string
}

type rawBody struct {
	contentType string
	data        []byte
}

const (
	maxSuccessBody = 64 << 20 // checkpoint stats of wide jobs can be large
	maxErrorBody   = 64 << 10
)

// do sends req and decodes a JSON response into out (nil: body ignored).
func (c *Client) do(ctx context.Context, req request, out any) error {
	segs, err := fillPath(req.ep.path, req.args)
	if err != nil {
		return NewError(req.op, ErrorReasonInvalidArgument, err.Error(), nil)
	}
	u := c.base.JoinPath(segs...)
	if len(req.query) > 0 {
		u.RawQuery = req.query.Encode()
	}
	fail := func(reason string, status int, msg string, cause error) *Error {
		e := NewError(req.op, reason, msg, cause)
		e.Method, e.URL, e.StatusCode = req.ep.method, u.Redacted(), status
		return e
	}

	var body io.Reader
	contentType := ""
	switch b := req.body.(type) {
	case nil:
	case rawBody:
		body, contentType = bytes.NewReader(b.data), b.contentType
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return fail(ErrorReasonInvalidArgument, 0, "cannot encode request body", err)
		}
		body, contentType = bytes.NewReader(data), "application/json"
	}

	rctx, cancel := context.WithTimeout(ctx, c.requestTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(rctx, req.ep.method, u.String(), body)
	if err != nil {
		return fail(ErrorReasonInvalidArgument, 0, "cannot build request", err)
	}
	for k, v := range c.headers {
		hreq.Header.Set(k, v)
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", c.userAgent)
	if contentType != "" {
		hreq.Header.Set("Content-Type", contentType)
	}
	auth, err := c.auth()
	if err != nil {
		return fail(ErrorReasonUnauthorized, 0, "cannot read the credentials", err)
	}
	if auth != "" {
		hreq.Header.Set("Authorization", auth)
	}

	resp, err := c.http.Do(hreq)
	if err != nil {
		reason := classifyTransport(ctx, err)
		msg := transportMessage(ctx, rctx, c.requestTimeout)
		if reason == ErrorReasonTLS {
			msg = c.tlsMessage(err)
		}
		return fail(reason, 0, msg, err)
	}
	defer resp.Body.Close()

	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if len(req.accepted) > 0 {
		ok = false
		for _, s := range req.accepted {
			ok = ok || resp.StatusCode == s
		}
	}
	limit := int64(maxErrorBody)
	if ok {
		limit = maxSuccessBody
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fail(classifyTransport(ctx, err), resp.StatusCode, "reading the response body: "+transportMessage(ctx, rctx, c.requestTimeout), err)
	}
	if !ok {
		reason, msg := classifyResponse(req, resp, data)
		return fail(reason, resp.StatusCode, msg, nil)
	}
	if int64(len(data)) > limit {
		return fail(ErrorReasonMalformedResponse, resp.StatusCode, fmt.Sprintf("response body exceeds %d bytes", limit), nil)
	}
	if out == nil {
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(ErrorReasonMalformedResponse, resp.StatusCode, "empty response body, expected JSON", nil)
	}
	if !isJSON(resp.Header.Get("Content-Type"), data) {
		return fail(ErrorReasonMalformedResponse, resp.StatusCode,
			fmt.Sprintf("expected JSON, got %s: %s", orUnknown(resp.Header.Get("Content-Type")), truncate(bodyText(data), maxMessage)), nil)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fail(ErrorReasonMalformedResponse, resp.StatusCode,
			"cannot decode JSON: "+err.Error()+": "+truncate(string(data), maxMessage), err)
	}
	return nil
}

// fillPath splits an endpoint path into escaped segments, replacing each
// {placeholder} with the next argument.
func fillPath(path string, args []string) ([]string, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	out := make([]string, 0, len(parts))
	n := 0
	for _, p := range parts {
		if strings.HasPrefix(p, "{") {
			if n >= len(args) || args[n] == "" {
				return nil, fmt.Errorf("missing value for %s in %s", p, path)
			}
			p = url.PathEscape(args[n])
			n++
		}
		out = append(out, p)
	}
	if n != len(args) {
		return nil, fmt.Errorf("%d values for %d placeholders in %s", len(args), n, path)
	}
	return out, nil
}

func transportMessage(ctx, rctx context.Context, timeout time.Duration) string {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return "canceled by the caller"
	case ctx.Err() != nil:
		return "the caller's deadline passed"
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("no response within the request timeout of %s", timeout)
	}
	return "no response from the REST endpoint"
}

func orUnknown(s string) string {
	if s == "" {
		return "no content type"
	}
	return s
}

func isJSON(contentType string, data []byte) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/json" || strings.HasSuffix(mt, "+json") {
		return true
	}
	// Some proxies drop the content type; trust the first byte then.
	first := bytes.TrimSpace(data)
	return mt == "" && len(first) > 0 && (first[0] == '{' || first[0] == '[')
}

// flinkErrorBody is Flink's error envelope.
type flinkErrorBody struct {
	Errors []string `json:"errors"`
}

var htmlTag = regexp.MustCompile(`(?s)<[^>]*>`)

// bodyText reduces an HTML page to its text for messages.
func bodyText(data []byte) string {
	s := string(data)
	if strings.Contains(strings.ToLower(s), "<html") || strings.HasPrefix(strings.TrimSpace(s), "<") {
		s = htmlTag.ReplaceAllString(s, " ")
	}
	return strings.Join(strings.Fields(s), " ")
}

// classifyResponse maps a non-success response to a reason and message.
func classifyResponse(req request, resp *http.Response, data []byte) (string, string) {
	status := resp.StatusCode
	var fe flinkErrorBody
	isFlink := json.Unmarshal(data, &fe) == nil && len(fe.Errors) > 0
	var msg, full string
	switch {
	case isFlink:
		full = strings.Join(fe.Errors, "\n")
		msg = truncate(firstLines(fe.Errors), maxMessage)
	case len(bytes.TrimSpace(data)) == 0:
		msg = "empty response body"
	default:
		msg = fmt.Sprintf("non-Flink response (%s): %s", orUnknown(resp.Header.Get("Content-Type")), truncate(bodyText(data), maxMessage))
	}

	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return ErrorReasonUnauthorized, msg
	}
	if status >= 300 && status < 400 {
		return ErrorReasonEndpointNotFound, fmt.Sprintf("redirected to %q; check BaseURL and authentication: %s", resp.Header.Get("Location"), msg)
	}
	if status == http.StatusNotFound && (!isFlink || strings.HasPrefix(strings.ToLower(fe.Errors[0]), "not found")) {
		// Flink answers unknown paths with "Not found: /path"; proxies
		// answer with HTML. Either way the base URL is likely wrong.
		return ErrorReasonEndpointNotFound, msg + " (is BaseURL right?)"
	}
	if r := classifyText(full); r != "" {
		return r, msg
	}
	switch {
	case status == http.StatusNotFound:
		if req.notFound != "" {
			return req.notFound, msg
		}
		return ErrorReasonEndpointNotFound, msg
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return ErrorReasonTimeout, msg
	case status == http.StatusConflict:
		return ErrorReasonOperationInProgress, msg
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == http.StatusBadGateway:
		return ErrorReasonUnavailable, msg
	case status >= 500:
		return ErrorReasonServerError, msg
	case status == http.StatusMethodNotAllowed:
		return ErrorReasonEndpointNotFound, msg
	}
	return ErrorReasonBadRequest, msg
}

// firstLines summarises each Flink error: its first meaningful line and,
// for server-side stack traces, the root cause.
func firstLines(errs []string) string {
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		if sum := summarizeTrace(e); sum != "" {
			lines = append(lines, sum)
		}
	}
	return strings.Join(lines, "; ")
}

// summarizeTrace returns the first meaningful line of a Java exception text
// plus its last "Caused by:" line when there is one.
func summarizeTrace(text string) string {
	var first, cause string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "", strings.HasPrefix(line, "at "), strings.HasPrefix(line, "..."),
			strings.HasPrefix(line, "<Exception on server side"), strings.HasPrefix(line, "End of exception on server side"):
		case strings.HasPrefix(line, "Caused by: "):
			cause = strings.TrimPrefix(line, "Caused by: ")
		case first == "":
			first = line
		}
	}
	if cause != "" && !strings.Contains(first, cause) {
		return first + " (root cause: " + cause + ")"
	}
	return first
}

// tlsMessage says which endpoint a TLS failure is with, what the client
// trusted and presented, and what the failure asks to change.
func (c *Client) tlsMessage(err error) string {
	var b strings.Builder
	b.WriteString("TLS with ")
	if c.cluster != "" {
		fmt.Fprintf(&b, "cluster %s at ", c.cluster)
	}
	b.WriteString(c.base.Redacted())
	if c.caFile != "" {
		fmt.Fprintf(&b, " failed, trusting CA file %s", c.caFile)
	} else {
		b.WriteString(" failed, trusting the system roots (no CA file)")
	}
	if c.serverName != "" {
		fmt.Fprintf(&b, ", server name %s", c.serverName)
	}
	if c.certFile != "" {
		fmt.Fprintf(&b, ", client certificate %s", c.certFile)
	} else {
		b.WriteString(", no client certificate")
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		certInvalid      x509.CertificateInvalidError
	)
	switch msg := err.Error(); {
	case errors.As(err, &unknownAuthority):
		b.WriteString(": the endpoint's certificate is signed by no CA trusted here; set tls.caFile to the CA of Flink's security.ssl.rest.truststore")
	case errors.As(err, &hostname):
		b.WriteString(": the endpoint's certificate is not for this host; set tls.serverName to a name it holds")
	case errors.As(err, &certInvalid):
		b.WriteString(": the endpoint's certificate is not valid (expired, or not for a server)")
	case strings.Contains(msg, "remote error: tls:"):
		b.WriteString(": the endpoint refused the handshake, as Flink does a client certificate its security.ssl.rest.truststore does not trust (security.ssl.rest.authentication-enabled); set tls.certFile and tls.keyFile to one it trusts")
	case strings.Contains(msg, "does not look like a TLS handshake"), strings.Contains(msg, "gave HTTP response to HTTPS client"):
		b.WriteString(": the endpoint does not speak TLS; use an http:// URL, or enable security.ssl.rest.enabled on the cluster")
	}
	return b.String()
}

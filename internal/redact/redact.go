// Package redact hides secrets in values that error messages repeat.
package redact

import (
	"net/url"
	"strings"
)

// URL is raw with any password hidden, parseable or not: a URL that does
// not parse may still carry user:password@ before its host.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil {
			return raw // as written
		}
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 && !strings.Contains(rest[:at], "/") {
		return scheme + "://xxxxx" + rest[at:]
	}
	return raw
}

package temporalconn

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// A host name that does not resolve is said so, not as gRPC's "no
// children to pick from"; other failures keep their cause.
func TestDialCauseNamesAnUnresolvableHost(t *testing.T) {
	grpcErr := errors.New("failed reaching server: no children to pick from")
	notFound := func(context.Context, string) ([]string, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "temporal.invalid", IsNotFound: true}
	}
	resolves := func(context.Context, string) ([]string, error) { return []string{"10.0.0.1"}, nil }
	if got := dialCause(context.Background(), notFound, "temporal.invalid:7233", grpcErr).Error(); !strings.Contains(got, `host name "temporal.invalid" does not resolve`) {
		t.Errorf("unresolvable host: %s", got)
	}
	for _, tc := range []struct {
		lookup  func(context.Context, string) ([]string, error)
		address string
	}{{resolves, "temporal.example:7233"}, {notFound, "10.0.0.1:7233"}} {
		if got := dialCause(context.Background(), tc.lookup, tc.address, grpcErr); got != grpcErr {
			t.Errorf("%s: %v; want the dial's own error", tc.address, got)
		}
	}
}

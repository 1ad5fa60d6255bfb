package core

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/redact"
)

// defaultPollInterval is how often long activities look at Flink again.
const defaultPollInterval = time.Second

// PollInterval is how often a long activity looks at Flink again: interval,
// or one second when it is not set.
func PollInterval(interval time.Duration) time.Duration {
	if interval > 0 {
		return interval
	}
	return defaultPollInterval
}

// FlinkUnanswered reports an error of a Flink cluster that did not answer
// or answered that it cannot serve yet (no connection, 503 during leader
// election, a timeout).
func FlinkUnanswered(err error) bool {
	return errors.Is(err, flink.ErrUnavailable) || errors.Is(err, flink.ErrTimeout)
}

func DerefStats(c *flink.CheckpointStatistics) flink.CheckpointStatistics {
	if c == nil {
		return flink.CheckpointStatistics{}
	}
	return *c
}

// FailureText is the first lines of a Flink failure cause.
func FailureText(f *flink.FailureCause) string {
	return FirstLines(f.StackTrace, f.Class)
}

// FirstLines keeps an exception readable in a status line: its first lines,
// which name the exception and the innermost "Caused by".
func FirstLines(stack, fallback string) string {
	if stack == "" {
		return fallback
	}
	lines := strings.Split(stack, "\n")
	var keep []string
	for i, l := range lines {
		if i == 0 || strings.HasPrefix(strings.TrimSpace(l), "Caused by:") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	s := strings.Join(keep, " <- ")
	if len(s) > 800 {
		s = s[:800] + "..."
	}
	return s
}

// FlinkFor returns the REST client of the cluster at restURL: a worker
// without Flink clients or a malformed URL is final, anything else is
// classified.
func FlinkFor(ctx context.Context, clients FlinkClients, restURL string) (FlinkAPI, error) {
	if clients == nil {
		return nil, NonRetryable(ErrTypeInvalidInput, "worker has no Flink client configured")
	}
	c, err := clients.For(ctx, restURL)
	if errors.Is(err, flink.ErrInvalidArgument) {
		return nil, NonRetryable(ErrTypeInvalidInput, "Flink REST endpoint %q: %v", restURL, err)
	}
	if err != nil {
		return nil, Classify("Flink REST endpoint "+redact.URL(restURL), err)
	}
	return c, nil
}

// Sleep waits d, or less when ctx ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

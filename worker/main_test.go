package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func noEnv(string) string { return "" }

func TestRunExitCodes(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"bad flag value":  {[]string{"--log-format", "xml"}, exitConfig, `log.format="xml"`},
		"unknown flag":    {[]string{"--bogus"}, exitConfig, "bogus"},
		"missing file":    {[]string{"--config", "/nonexistent.yaml"}, exitConfig, "/nonexistent.yaml"},
		"unreachable":     {[]string{"--temporal-address", "127.0.0.1:1", "--temporal-connect-timeout", "2s", "--http-listen", ""}, exitUnreachable, "127.0.0.1:1"},
		"help is success": {[]string{"-h"}, exitOK, "task-queue"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, noEnv, &stderr)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr does not mention %q: %s", tc.want, stderr.String())
			}
		})
	}
}

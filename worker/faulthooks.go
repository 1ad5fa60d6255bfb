//go:build faulthooks

package main

import (
	"os"

	"go.temporal.io/sdk/interceptor"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
)

// faultHooks holds activities where a test says (FLINKMAINT_FAULT_HOOKS_DIR):
// only in the builds the tests make (-tags faulthooks), never in a release.
func faultHooks() []interceptor.WorkerInterceptor {
	dir := os.Getenv(faulthook.EnvDir)
	if dir == "" {
		return nil
	}
	return []interceptor.WorkerInterceptor{faulthook.Interceptor(dir)}
}

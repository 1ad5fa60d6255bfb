//go:build !faulthooks

package main

import "go.temporal.io/sdk/interceptor"

// faultHooks is empty in every build but the tests' (see faulthooks.go).
func faultHooks() []interceptor.WorkerInterceptor { return nil }

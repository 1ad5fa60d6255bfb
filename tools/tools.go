//go:build tools

// Package tools pins the versions of the linters `make lint` runs and of
// gremlins, the mutation tester `make mutate` runs. It is a module of its
// own so their dependencies never touch the main module.
package tools

import (
	_ "github.com/go-gremlins/gremlins/cmd/gremlins"
	_ "go.temporal.io/sdk/contrib/tools/workflowcheck"
	_ "honnef.co/go/tools/cmd/staticcheck"
)

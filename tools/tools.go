//go:build tools

// Package tools pins the versions of the linters `make lint` runs. It is a
// module of its own so their dependencies never touch the main module.
package tools

import (
	_ "go.temporal.io/sdk/contrib/tools/workflowcheck"
	_ "honnef.co/go/tools/cmd/staticcheck"
)

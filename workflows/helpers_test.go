package workflows

import "github.com/stretchr/testify/mock"

// mockAny matches any argument in OnActivity expectations.
var mockAny = mock.Anything

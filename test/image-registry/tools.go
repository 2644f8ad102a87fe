//go:build tools

// The conformance run's image registry (scripts/image-registry.sh): the CNCF distribution
// registry's own program, built from its published module at the version go.mod pins.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
)

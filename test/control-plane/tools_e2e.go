//go:build tools

// The conformance run (scripts/conformance.sh) builds Kubernetes' e2e suite, the ginkgo runner
// that runs it in parallel, and the programs of the agnhost and nonewprivs test images from this
// same module, so all of them stay at the control plane's pinned versions.
package tools

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/nonewprivs"
)

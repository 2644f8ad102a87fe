//go:build tools

// The conformance run (scripts/conformance.sh) builds Kubernetes' e2e suite, the ginkgo runner
// that runs it in parallel, and the programs of the agnhost, nonewprivs and sample-apiserver test
// images from this same module, so all of them stay at the control plane's pinned versions
// (k8s.io/sample-apiserver is the staging module of the same tag; its main package is the
// module's root).
package tools

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/nonewprivs"
	_ "k8s.io/sample-apiserver"
)

//go:build tools

// Package tools keeps github.com/coredns/coredns (its main package) in go.mod and go.sum.
package tools

import _ "github.com/coredns/coredns"

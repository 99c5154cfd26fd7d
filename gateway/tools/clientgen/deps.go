//go:build tools

// Package clientgen pins the client generator CI runs against the OpenAPI
// document (.ci/check-clients): oapi-codegen, a tool of this module, and
// the runtime its generated Go code imports, which this file keeps
// required. It is a module of its own, outside go.work, so neither
// reaches the gateway's build; the check compiles the generated client in
// a copy of it, so go.sum already lists every module the client needs.
package clientgen

import (
	_ "github.com/oapi-codegen/runtime"
	_ "github.com/oapi-codegen/runtime/types"
)

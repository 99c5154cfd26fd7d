//go:build !linux

package e2e

import "syscall"

// procAttr puts a started process in its own group; only Linux can also
// tie its life to this test process's.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

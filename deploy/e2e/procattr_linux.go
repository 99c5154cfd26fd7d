package e2e

import "syscall"

// procAttr puts a started process in its own group (a kill of the group
// reaches its children) and has the kernel kill it if this test process
// dies first (a panic or a timeout skips every cleanup), so no service of
// a stack outlives the run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

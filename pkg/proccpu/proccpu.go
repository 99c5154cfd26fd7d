// Package proccpu reads what benchmarks compare side by side on a noisy
// machine: the CPU time a local process (a service, a PostgreSQL backend)
// has used, which the machine's load barely moves, unlike wall time.
package proccpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the kernel's clock tick for /proc/<pid>/stat times (USER_HZ,
// 100 on every Linux architecture Go supports).
const userHZ = 100

// Of is the user + system CPU time process pid has used so far, 0 when it
// cannot be read (the process ended, or no /proc).
func Of(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	// The command name (field 2) may hold spaces; fields after its ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:]) // fields from the 3rd on
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+sys) * time.Second / userHZ
}

// Sum is the CPU time the processes pids have used so far, say the
// PostgreSQL backends pg_stat_activity lists for a benchmark's pool.
func Sum[P ~int | ~int32 | ~int64](pids []P) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		sum += Of(int(pid))
	}
	return sum
}

// LoadAvg is the 1, 5 and 15 minute load average, for a report ("unknown"
// without /proc).
func LoadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:min(3, len(f))], " ")
}

// Machine is the CPU time every processor of the machine has spent busy
// since boot (user, nice, system, interrupts and steal from /proc/stat;
// not idle or I/O wait), 0 without /proc. The difference over a run is
// what all of its processes cost, those a benchmark does not name (an
// event consumer, Redis) included.
func Machine() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	// user nice system idle iowait irq softirq steal
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		busy += v
	}
	return time.Duration(busy) * time.Second / userHZ
}

// Package buildinfo names the release a binary was built from, so that
// during a rolling deploy, when two releases of a context run side by
// side (docs/releasing.md), every log line, trace and metrics scrape says
// which one answered.
package buildinfo

import (
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// version is set at link time by the release builds (the Makefile and the
// Dockerfiles): -ldflags "-X github.com/opencrm/crm/pkg/buildinfo.version=v0.2.0".
var version string

// Version is the release tag the binary was linked with; without one, "dev"
// followed by the commit the go tool stamped from the checkout, if any
// ("dev+1bca831a2f3c", "dev+1bca831a2f3c.dirty").
func Version() string { return resolved() }

var resolved = sync.OnceValue(func() string {
	if version != "" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return fromSettings(bi)
})

// fromSettings is the development version read from the go tool's VCS
// stamp.
func fromSettings(bi *debug.BuildInfo) string {
	if bi == nil {
		return "dev"
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += ".dirty"
	}
	return "dev+" + rev
}

// LinkFlag is the symbol -ldflags -X sets: "-X " + LinkFlag + "=v0.2.0".
const LinkFlag = "github.com/opencrm/crm/pkg/buildinfo.version"

// Metric is crm_build_info, always 1, labelled with the version: a series
// to join others on during a rolling deploy, when two releases serve side
// by side. Each process's registry gets its own.
func Metric() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "crm_build_info",
		Help:        "Always 1; the version label is the release this process runs.",
		ConstLabels: prometheus.Labels{"version": Version()},
	})
	g.Set(1)
	return g
}

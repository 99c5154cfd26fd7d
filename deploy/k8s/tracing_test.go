package k8s_test

import (
	"path/filepath"
	"testing"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/tracing"
)

// TestProductionSamplesTraces: the production overlay's crm-config records
// one trace in ten once tracing is turned on, with settings every process
// accepts at start-up.
func TestProductionSamplesTraces(t *testing.T) {
	t.Parallel()
	for _, o := range build(t, filepath.Join(deployDir, "k8s", "overlays", "production")) {
		if o.Kind != "ConfigMap" || o.Metadata.Name != "crm-config" {
			continue
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		o.decode(t, &cm)
		var c tracing.Config
		if err := config.ParseMap(&c, cm.Data); err != nil {
			t.Fatalf("crm-config's tracing settings: %v", err)
		}
		if c.Ratio != 0.1 {
			t.Errorf("sampled share of traces = %v, want 0.1 (OTEL_TRACES_SAMPLER %q, OTEL_TRACES_SAMPLER_ARG %q)",
				c.Ratio, cm.Data["OTEL_TRACES_SAMPLER"], cm.Data["OTEL_TRACES_SAMPLER_ARG"])
		}
		return
	}
	t.Fatal("no crm-config in the production overlay")
}

package renderq

import (
	"testing"

	"github.com/opencrm/crm/pkg/config"
)

// TestClientSettlesTagged: the client, not the worker, decides tagging, from
// RENDER_PDF_TAGGED, and puts it in the job before computing the key, so the
// key it waits on is the key every worker stores under.
func TestClientSettlesTagged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		want bool
	}{{"", false}, {"false", false}, {"true", true}} {
		l := config.FromMap(map[string]string{"RENDER_PDF_TAGGED": tc.env})
		cfg := LoadConfig(l)
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
		if cfg.PDFTagged != tc.want {
			t.Errorf("RENDER_PDF_TAGGED=%q: PDFTagged = %v, want %v", tc.env, cfg.PDFTagged, tc.want)
		}
	}

	pdf := Job{Format: PDF, HTML: "<p>x</p>"}
	tagged, untagged := Config{PDFTagged: true}, Config{}
	if got := tagged.settle(pdf); !got.Tagged {
		t.Error("tagged client sent an untagged PDF job")
	}
	if tagged.settle(pdf).Key() == untagged.settle(pdf).Key() {
		t.Error("differently configured clients share a key")
	}
	if untagged.settle(pdf).Key() != pdf.Key() {
		t.Error("untagged client changed the job")
	}
	// A caller may still ask for a tagged PDF under an untagged default.
	if !untagged.settle(Job{Format: PDF, Tagged: true}).Tagged {
		t.Error("untagged client dropped an explicit Tagged")
	}
	docx := Job{Format: DOCX, HTML: "<p>x</p>"}
	if got := tagged.settle(docx); got.Tagged || got.Key() != docx.Key() {
		t.Error("tagging leaked into a DOCX job")
	}
}

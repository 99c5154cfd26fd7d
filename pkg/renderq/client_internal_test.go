package renderq

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
)

// TestConfigDefaults: the variables' defaults are those of a Config
// written in code and completed by NewClient.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	var got Config
	if err := config.ParseMap(&got, nil); err != nil {
		t.Fatal(err)
	}
	want := Config{RedisURL: "redis://localhost:6379/0", Queues: Queues{Prefix: DefaultPrefix},
		Wait: 30 * time.Second, ResultTTL: 24 * time.Hour, MaxRetry: 3, PerUser: DefaultPerUser,
		Cooldown: DefaultCooldown, Lang: DefaultLang}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed defaults (-want +got):\n%s", diff)
	}
	coded := Config{RedisURL: want.RedisURL, MaxRetry: 3, Lang: DefaultLang, Queues: Queues{Prefix: DefaultPrefix}}
	coded.defaults()
	if diff := cmp.Diff(want, coded); diff != "" {
		t.Errorf("defaults in code (-want +got):\n%s", diff)
	}
}

// TestConfigRefusesBadValues: each bad value stops start-up naming its
// variable.
func TestConfigRefusesBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, value, want string }{
		{"REDIS_URL", "localhost:6379", "REDIS_URL: must be an absolute URL"},
		{"RENDER_WAIT", "-1s", `RENDER_WAIT: must be a positive duration such as 30s, got "-1s"`},
		{"RENDER_WAIT", "soon", "RENDER_WAIT: "},
		{"RENDER_MAX_RETRY", "11", "RENDER_MAX_RETRY: must be between 0 and 10"},
		{"RENDER_USER_INFLIGHT", "0", "RENDER_USER_INFLIGHT: must be between 1 and 100"},
		{"RENDER_PDF_TAGGED", "maybe", `RENDER_PDF_TAGGED: must be true or false, got "maybe"`},
	}
	for _, tc := range tests {
		var cfg Config
		err := config.ParseMap(&cfg, map[string]string{tc.name: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: err = %v, want it to contain %q", tc.name, tc.value, err, tc.want)
		}
	}
}

// TestConfigDocumentSettings: PDFs are tagged and documents are in
// English unless the deployment says otherwise; a language that is not a
// BCP 47 tag stops the service at start-up, naming the variable.
func TestConfigDocumentSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		env          map[string]string
		wantUntagged Untagged
		wantLang     string
		wantErr      string
	}{
		{"defaults", nil, false, "en", ""},
		{"tagging on", map[string]string{"RENDER_PDF_TAGGED": "true"}, false, "en", ""},
		{"tagging off", map[string]string{"RENDER_PDF_TAGGED": "false"}, true, "en", ""},
		{"language", map[string]string{"RENDER_DOCUMENT_LANG": "de-AT"}, false, "de-AT", ""},
		{"language canonicalised", map[string]string{"RENDER_DOCUMENT_LANG": "de-at"}, false, "de-AT", ""},
		{"not a language", map[string]string{"RENDER_DOCUMENT_LANG": "en_GB!"}, false, "", `RENDER_DOCUMENT_LANG: "en_GB!" is not a BCP 47 language tag`},
		{"markup", map[string]string{"RENDER_DOCUMENT_LANG": `en"><script>`}, false, "", "RENDER_DOCUMENT_LANG: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cfg Config
			err := config.ParseMap(&cfg, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.PDFUntagged != tc.wantUntagged || cfg.Lang != tc.wantLang {
				t.Errorf("PDFUntagged, Lang = %v, %q; want %v, %q", cfg.PDFUntagged, cfg.Lang, tc.wantUntagged, tc.wantLang)
			}
		})
	}
}

// TestClientSettlesDocumentSettings: the client, not the worker, decides
// tagging and the default language and puts them in the job before
// computing the key, so the key it waits on is the key every worker stores
// under, and a change of either setting is a new key.
func TestClientSettlesDocumentSettings(t *testing.T) {
	t.Parallel()
	tagged, untagged, german := Config{}, Config{PDFUntagged: true}, Config{Lang: "de"}
	pdf := Job{Format: PDF, HTML: "<p>x</p>"}
	docx := Job{Format: DOCX, HTML: "<p>x</p>"}
	tests := []struct {
		name string
		cfg  Config
		job  Job
		want Job
	}{
		{"default PDF is tagged, in English", tagged, pdf, Job{Format: PDF, HTML: "<p>x</p>", Tagged: true, Lang: "en"}},
		{"untagged client", untagged, pdf, Job{Format: PDF, HTML: "<p>x</p>", Lang: "en"}},
		{"an explicit Tagged stays under an untagged client", untagged, Job{Format: PDF, Tagged: true}, Job{Format: PDF, Tagged: true, Lang: "en"}},
		{"deployment language", german, pdf, Job{Format: PDF, HTML: "<p>x</p>", Tagged: true, Lang: "de"}},
		{"the job's language wins, canonicalised", german, Job{Format: PDF, Lang: "fr-ch"}, Job{Format: PDF, Tagged: true, Lang: "fr-CH"}},
		{"DOCX is never tagged but has a language", tagged, docx, Job{Format: DOCX, HTML: "<p>x</p>", Lang: "en"}},
		{"a bad language is left for Validate", tagged, Job{Format: DOCX, Lang: "??"}, Job{Format: DOCX, Lang: "??"}},
	}
	for _, tc := range tests {
		got := tc.cfg.Settle(tc.job)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		if err := got.Validate(); (err != nil) != (tc.job.Lang == "??") {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
	}
	keys := map[string]string{}
	for name, job := range map[string]Job{
		"tagged": tagged.Settle(pdf), "untagged": untagged.Settle(pdf), "german": german.Settle(pdf),
	} {
		if other, ok := keys[job.Key()]; ok {
			t.Errorf("%s and %s clients share a key", name, other)
		}
		keys[job.Key()] = name
	}
}

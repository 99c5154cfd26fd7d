package renderq_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/renderq"
)

func TestKey(t *testing.T) {
	t.Parallel()
	base := renderq.Job{Format: renderq.PDF, Title: "T", HTML: "<p>x</p>", Header: [3]string{"a", "b", "c"}}
	if base.Key() != base.Key() || len(base.Key()) != 64 {
		t.Fatalf("key not stable or not sha256 hex: %s", base.Key())
	}
	changes := []struct {
		name string
		edit func(*renderq.Job)
	}{
		{"format", func(j *renderq.Job) { j.Format = renderq.DOCX }},
		{"title", func(j *renderq.Job) { j.Title = "U" }},
		{"html", func(j *renderq.Job) { j.HTML = "<p>y</p>" }},
		{"header cell", func(j *renderq.Job) { j.Header[1] = "B" }},
		{"footer cell", func(j *renderq.Job) { j.Footer[2] = "c" }},
		{"header moved to footer", func(j *renderq.Job) { j.Footer, j.Header = j.Header, [3]string{} }},
		// Tagging changes the PDF's bytes, so a tagged and an untagged print
		// of the same content must never share a stored result or a task.
		{"tagged", func(j *renderq.Job) { j.Tagged = true }},
		// So does the language (<html lang>, the tagged PDF's /Lang).
		{"lang", func(j *renderq.Job) { j.Lang = "de" }},
	}
	for _, tc := range changes {
		j := base
		tc.edit(&j)
		if j.Key() == base.Key() {
			t.Errorf("%s: key unchanged", tc.name)
		}
	}
}

// TestKeyOutputSettings: jobs that differ only in a setting that changes the
// rendered bytes get different keys; identical jobs, built separately, share
// one key (and so one task and one stored result).
func TestKeyOutputSettings(t *testing.T) {
	t.Parallel()
	job := func(tagged bool) renderq.Job {
		return renderq.Job{Format: renderq.PDF, Title: "T", HTML: "<p>x</p>", Footer: [3]string{"", "{{page}}", ""}, Tagged: tagged}
	}
	tests := []struct {
		name string
		a, b renderq.Job
		same bool
	}{
		{"untagged twice", job(false), job(false), true},
		{"tagged twice", job(true), job(true), true},
		{"tagged vs untagged", job(true), job(false), false},
	}
	for _, tc := range tests {
		if got := tc.a.Key() == tc.b.Key(); got != tc.same {
			t.Errorf("%s: equal keys = %v, want %v", tc.name, got, tc.same)
		}
	}
}

func TestSplitPlaceholders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"plain", []string{"plain"}},
		{"Page {{page}} of {{pages}}", []string{"Page ", "{{page}}", " of ", "{{pages}}"}},
		{"{{ PAGE }}/{{Pages}}", []string{"{{page}}", "/", "{{pages}}"}},
		{"{{other}} {{page}}", []string{"{{other}} ", "{{page}}"}},
		{"open {{page", []string{"open {{page"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, renderq.SplitPlaceholders(tc.in)); diff != "" {
			t.Errorf("SplitPlaceholders(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestUnavailableIsProblem503(t *testing.T) {
	t.Parallel()
	err := error(&renderq.UnavailableError{Reason: renderq.TimedOut, RetryAfter: 10 * time.Second, Detail: "internal detail"})
	p := problem.From(err)
	if p.Status != http.StatusServiceUnavailable || p.RetryAfter != 10 {
		t.Errorf("got status %d retry %d, want 503 and 10", p.Status, p.RetryAfter)
	}
	if p.Detail == "internal detail" {
		t.Error("internal detail leaked into the problem")
	}
	var u *renderq.UnavailableError
	if !errors.As(err, &u) {
		t.Error("errors.As lost the typed error")
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := (renderq.Job{Format: "odt"}).Validate(); err == nil {
		t.Error("unknown format accepted")
	}
	if err := (renderq.Job{Format: renderq.DOCX}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (renderq.Job{Format: renderq.PDF, Tagged: true}).Validate(); err != nil {
		t.Error(err)
	}
	// Tagging is a PDF setting; a tagged DOCX would only split the cache.
	if err := (renderq.Job{Format: renderq.DOCX, Tagged: true}).Validate(); err == nil {
		t.Error("tagged DOCX accepted")
	}
	// The language goes into markup (<html lang>, w:lang): only a BCP 47 tag.
	for _, lang := range []string{"en", "de-AT", "zh-Hant-TW", "sr-Latn"} {
		if err := (renderq.Job{Format: renderq.PDF, Lang: lang}).Validate(); err != nil {
			t.Errorf("lang %q: %v", lang, err)
		}
	}
	for _, lang := range []string{"english", "en_US", `en" onload="x`, "e", "en-" + strings.Repeat("abcdefgh-", 5) + "x"} {
		if err := (renderq.Job{Format: renderq.PDF, Lang: lang}).Validate(); err == nil {
			t.Errorf("lang %q accepted", lang)
		}
	}
}

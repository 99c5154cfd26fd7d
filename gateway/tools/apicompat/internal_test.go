package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// releasedInternal is the directory of the released internal documents;
// each case edits copies of them as code changing a context's internal
// API would, and the gate must tell.
const releasedInternal = "../../../api/released/internal"

func readInternal(t *testing.T) map[string][]byte {
	t.Helper()
	docs, err := readDocuments(releasedInternal)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []string{"contacts", "deals", "identity", "leads", "mail"} {
		if docs[ctx] == nil {
			t.Fatalf("no released internal document of %s in %s", ctx, releasedInternal)
		}
	}
	return docs
}

// edit returns docs with ctx's document changed by f.
func edit(t *testing.T, docs map[string][]byte, ctx string, f func(doc)) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for k, v := range docs {
		out[k] = v
	}
	var d doc
	if err := json.Unmarshal(docs[ctx], &d); err != nil {
		t.Fatal(err)
	}
	f(d)
	out[ctx] = encode(t, d)
	return out
}

func internalList(fs []InternalFinding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// A breaking change of one context's internal API is caught and named by
// context, operation and field; an additive one, and a context whose
// internal API is new, pass.
func TestCheckInternal(t *testing.T) {
	t.Parallel()
	released := readInternal(t)
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		revision map[string][]byte
		// want are substrings of the findings, one per expected finding.
		want  []string
		added []string
	}{
		{"unchanged", released, nil, nil},
		{"a response field a consumer reads removed", edit(t, released, "identity", func(d doc) {
			// The gateway's API key check reads allowed_origins.
			removeProperty(t, d, "VerifiedKey", "allowed_origins")
		}), []string{"identity (internal): POST /internal/api-keys/verify: response-required-property-removed:", "data/allowed_origins"}, nil},
		{"a created record's id removed", edit(t, released, "contacts", func(d doc) {
			removeProperty(t, d, "Contact", "id")
		}), []string{"contacts (internal): POST /internal/contacts: response-required-property-removed:", "data/id"}, nil},
		{"a request field becomes required", edit(t, released, "mail", func(d doc) {
			// Contacts of the previous release may send a move without emails.
			s := at(t, d, "components", "schemas", "Move").(doc)
			s["required"] = append(s["required"].([]any), "emails")
		}), []string{"mail (internal): POST /internal/merges/{id}: request-property-became-required:", "emails"}, nil},
		{"an operation removed", edit(t, released, "leads", func(d doc) {
			delete(at(t, d, "paths").(doc), "/internal/leads/duplicates")
		}), []string{"leads (internal): GET /internal/leads/duplicates: api-path-removed-without-deprecation:"}, nil},
		{"a response field added", edit(t, released, "deals", func(d doc) {
			at(t, d, "components", "schemas", "MergeData", "properties").(doc)["currency"] = doc{"type": "string"}
		}), nil, nil},
		{"a new context's internal API", func() map[string][]byte {
			rev := edit(t, released, "deals", func(doc) {})
			rev["billing"] = released["deals"]
			return rev
		}(), nil, []string{"billing"}},
		{"a context's whole internal API removed", func() map[string][]byte {
			rev := edit(t, released, "deals", func(doc) {})
			delete(rev, "intake")
			return rev
		}(), []string{"intake (internal): *: internal-api-removed:"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, added, err := CheckInternal(released, tc.revision, now)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tc.added, added) {
				t.Errorf("new contexts %q, want %q", added, tc.added)
			}
			text := internalList(got)
			if len(tc.want) == 0 && len(got) > 0 {
				t.Fatalf("findings of an additive change:\n%s", text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("findings lack %q:\n%s", w, text)
				}
			}
			for _, f := range got {
				if !slices.ContainsFunc(tc.want, func(w string) bool { return strings.HasPrefix(w, f.Context+" (internal): ") }) {
					t.Errorf("finding of a context the case did not change: %s", f)
				}
			}
		})
	}
}

// The command: the internal check's exit code and what it prints, beside
// the public one or alone.
func TestRunInternal(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	released := readInternal(t)
	write := func(docs map[string][]byte) string {
		dir := t.TempDir()
		for ctx, b := range docs {
			if err := os.WriteFile(filepath.Join(dir, ctx+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	broken := write(edit(t, released, "identity", func(d doc) { removeProperty(t, d, "VerifiedKey", "allowed_origins") }))
	withNew := write(func() map[string][]byte {
		rev := edit(t, released, "deals", func(doc) {})
		rev["billing"] = released["deals"]
		return rev
	}())
	garbage := write(map[string][]byte{"contacts": []byte("{not json")})
	tests := []struct {
		name           string
		base, revision string
		code           int
		stdout, stderr []string
	}{
		{"same", releasedInternal, releasedInternal, 0, []string{"no breaking change of the internal APIs"}, nil},
		{"removed field", releasedInternal, broken, 1, nil, []string{"1 breaking change(s) of the internal APIs",
			"identity (internal): POST /internal/api-keys/verify: response-required-property-removed:", "data/allowed_origins"}},
		{"new context", releasedInternal, withNew, 0, []string{"billing (internal): no released document", "no breaking change of the internal APIs"}, nil},
		{"nothing released yet", filepath.Join(t.TempDir(), "none"), releasedInternal, 0, []string{"contacts (internal): no released document"}, nil},
		{"nothing generated", releasedInternal, t.TempDir(), 2, nil, []string{"no internal API document in"}},
		{"not a document", releasedInternal, garbage, 2, nil, []string{"contacts: revision document"}},
		{"no arguments", "", "", 2, nil, []string{"usage: apicompat -internal-base"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := runInternal(tc.base, tc.revision, now, &stdout, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
	for _, tc := range []struct{ a, b, want int }{{0, 0, 0}, {0, 1, 1}, {1, 0, 1}, {1, 2, 2}, {2, 0, 2}} {
		if got := worst(tc.a, tc.b); got != tc.want {
			t.Errorf("worst(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/internalapi"
)

// -internal-dir writes one document per context that serves an internal
// API, as <context>.json, beside the public document, and leaves other
// files of the directory alone.
func TestWritesInternalDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	internal := filepath.Join(dir, "internal")
	if err := os.MkdirAll(internal, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(internal, "README.md"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(filepath.Join(dir, "openapi.json"), internal); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range internalapi.Services() {
		want = append(want, s+".json")
	}
	want = append(want, "README.md")
	slices.Sort(want)
	entries, err := os.ReadDir(internal)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "openapi.json")); err != nil {
		t.Errorf("public document: %v", err)
	}
	// Generating is deterministic, byte for byte: an unchanged API
	// regenerates its released documents unchanged.
	again := t.TempDir()
	if err := run(filepath.Join(again, "openapi.json"), again); err != nil {
		t.Fatal(err)
	}
	for _, s := range internalapi.Services() {
		name := s + ".json"
		a, _ := os.ReadFile(filepath.Join(internal, name))
		b, _ := os.ReadFile(filepath.Join(again, name))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

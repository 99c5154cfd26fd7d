package k8s_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// deployDir is the repository's deploy/ directory, which holds every
// kustomization (this module lives in deploy/k8s).
const deployDir = ".."

// object is the part of a rendered resource the checks read; the rest of
// each kind is decoded into the structs of kinds.go.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	raw json.RawMessage
}

// decode unmarshals the whole resource into v.
func (o object) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(o.raw, v); err != nil {
		t.Fatalf("decode %s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// build renders the kustomization in dir as kubectl apply -k would.
func build(t *testing.T, dir string) []object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []object
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: marshal %s: %v", dir, r.CurId(), err)
		}
		var o object
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: decode %s: %v", dir, r.CurId(), err)
		}
		o.raw = b
		out = append(out, o)
	}
	return out
}

// kustomizations lists every directory under deploy/ holding a
// kustomization.yaml.
func kustomizations(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(deployDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func TestEveryKustomizationRenders(t *testing.T) {
	t.Parallel()
	dirs := kustomizations(t)
	for _, want := range []string{"k8s/base", "k8s/overlays/production", "render", "postgres"} {
		if _, err := os.Stat(filepath.Join(deployDir, want, "kustomization.yaml")); err != nil {
			t.Errorf("kustomization %s: %v", want, err)
		}
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			if objs := build(t, dir); len(objs) == 0 {
				t.Errorf("%s renders no resource", dir)
			}
		})
	}
}

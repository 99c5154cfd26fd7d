package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "dev"},
		{"no VCS stamp", &debug.BuildInfo{}, "dev"},
		{"a clean checkout", &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1bca831a2f3c4d5e6f708192a3b4c5d6e7f80912"},
			{Key: "vcs.modified", Value: "false"},
		}}, "dev+1bca831a2f3c"},
		{"uncommitted changes", &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1bca831a2f3c4d5e6f708192a3b4c5d6e7f80912"},
			{Key: "vcs.modified", Value: "true"},
		}}, "dev+1bca831a2f3c.dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := fromSettings(tc.bi); got != tc.want {
				t.Errorf("fromSettings = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLinkedVersion builds a program the way the release builds do and
// checks that the tag it is linked with is the version it reports: the
// -X flag names an unexported variable by its full path, which no
// compiler checks.
func TestLinkedVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	src := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/opencrm/crm/pkg/buildinfo\"\n)\n\nfunc main() { fmt.Print(buildinfo.Version()) }\n"
	if err := os.WriteFile(main, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "v")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X "+LinkFlag+"=v9.8.7", main)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "v9.8.7" {
		t.Errorf("version = %q, want v9.8.7", got)
	}
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Version skew (make test-skew, skew_test.go): a stack may run some of its
// processes from another directory of binaries, the previous release's,
// built from git by PreviousRelease.

// processBinDir is the directory a process's binary is taken from: its
// Options.Binaries entry (a replica follows its process), else Start's.
func (s *Stack) processBinDir(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.binDirs[binaryName(name)]; ok && d != "" {
		return d
	}
	return s.binDir
}

// SetBinaries makes the next StartProcess of name run the binary in dir
// ("" goes back to Start's directory).
func (s *Stack) SetBinaries(name, dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.binDirs == nil {
		s.binDirs = map[string]string{}
	}
	s.binDirs[name] = dir
}

// Release is a previous release's binaries.
type Release struct {
	Ref    string // the tag, or the commit PREV_REF named
	Commit string
	BinDir string
}

// PreviousRelease resolves the previous release — the newest tag v*.*.*
// (not a pre-release) reachable from HEAD and not on HEAD itself, else prevRef (a commit or any git
// revision) — and builds its binaries from git into a cache directory
// keyed by commit (os.TempDir()/crm-skew/<commit>), reusing an earlier
// build. The tree is exported with git archive into a temporary directory,
// built there with its own go.work, and removed.
func PreviousRelease(ctx context.Context, prevRef string) (*Release, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
			}
			return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	ref := ""
	tags, err := git("tag", "--list", "v*.*.*", "--sort=-v:refname", "--merged", "HEAD")
	if err != nil {
		return nil, err
	}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	for _, t := range strings.Fields(tags) {
		if strings.Contains(t, "-") { // a pre-release
			continue
		}
		// CI of a release's own tag compares it with the one before.
		if c, err := git("rev-parse", t+"^{commit}"); err != nil || c == head {
			continue
		}
		ref = t
		break
	}
	if ref == "" {
		if prevRef == "" {
			return nil, errors.New("skew: no tag v*.*.* and no PREV_REF: name the previous release's commit (make test-skew PREV_REF=<commit>)")
		}
		ref = prevRef
	}
	commit, err := git("rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil || commit == "" {
		return nil, fmt.Errorf("skew: the previous release %q is not a commit of this clone (a shallow clone? git fetch --unshallow --tags; or make test-skew PREV_REF=<a commit that exists>)", ref)
	}
	rel := &Release{Ref: ref, Commit: commit, BinDir: filepath.Join(os.TempDir(), "crm-skew", commit)}
	if _, err := os.Stat(filepath.Join(rel.BinDir, "gateway")); err == nil {
		return rel, nil
	}
	src, err := os.MkdirTemp("", "crm-skew-src-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(src)
	archive := exec.CommandContext(ctx, "sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", commit, src)
	archive.Dir = root
	if out, err := archive.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("skew: git archive %s: %v\n%s", commit, err, out)
	}
	var pkgs []string
	for _, name := range append(append([]string{}, Services...), "render") {
		if _, err := os.Stat(filepath.Join(src, "services", name, "cmd", name, "main.go")); err == nil {
			pkgs = append(pkgs, "./services/"+name+"/cmd/"+name)
		}
	}
	pkgs = append(pkgs, "./gateway/cmd/gateway")
	tmp, err := os.MkdirTemp(filepath.Dir(rel.BinDir), commit+".build-")
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(rel.BinDir), 0o755); err != nil {
			return nil, err
		}
		if tmp, err = os.MkdirTemp(filepath.Dir(rel.BinDir), commit+".build-"); err != nil {
			return nil, err
		}
	}
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-trimpath", "-o", tmp + "/"}, pkgs...)...)
	build.Dir = src
	// The old tree's own go.work, whatever the caller's GOWORK says.
	gowork := "GOWORK=off"
	if _, err := os.Stat(filepath.Join(src, "go.work")); err == nil {
		gowork = "GOWORK=" + filepath.Join(src, "go.work")
	}
	build.Env = append(os.Environ(), gowork, "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("skew: building %s (%s): %v\n%s", ref, commit, err, out)
	}
	// Two runs may build at once: the first rename wins, the other's
	// identical binaries are dropped.
	if err := os.Rename(tmp, rel.BinDir); err != nil {
		os.RemoveAll(tmp)
		if _, statErr := os.Stat(filepath.Join(rel.BinDir, "gateway")); statErr != nil {
			return nil, err
		}
	}
	return rel, nil
}

package internalapi_test

import (
	"errors"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// internalConstants type-checks the non-test files of every contract
// package (imports unresolved: the constants of a path are spelled within
// their package) and returns each package-level string constant holding
// an internal pattern ("POST /internal/contacts") or path, by
// "<pkg>.<name>".
func internalConstants(t *testing.T) (patterns, paths map[string]string) {
	t.Helper()
	patterns, paths = map[string]string{}, map[string]string{}
	dirs, err := filepath.Glob("../*api")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		fset := token.NewFileSet()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var files []*ast.File
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		conf := types.Config{Importer: noImports{}, Error: func(error) {}}
		pkg, _ := conf.Check(filepath.Base(dir), fset, files, nil)
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			c, ok := scope.Lookup(name).(*types.Const)
			if !ok || c.Val().Kind() != constant.String {
				continue
			}
			v := constant.StringVal(c.Val())
			key := pkg.Name() + "." + name
			switch method, path, _ := strings.Cut(v, " "); {
			case strings.HasPrefix(v, route.InternalPrefix):
				paths[key] = v
			case strings.HasPrefix(path, route.InternalPrefix) && strings.ToUpper(method) == method:
				patterns[key] = v
			}
		}
	}
	return patterns, paths
}

type noImports struct{}

func (noImports) Import(string) (*types.Package, error) { return nil, errors.New("not resolved") }

// TestEveryInternalConstantIsDeclared: every internal route a contract
// package spells as a pattern constant (what services mount and clients
// call) is declared in InternalRoutes, and every internal path constant
// is the path, or a prefix, of a declared route; so a route cannot be
// added to a contract without its declaration, hence without its
// released document.
func TestEveryInternalConstantIsDeclared(t *testing.T) {
	t.Parallel()
	patterns, paths := internalConstants(t)
	if len(patterns) < 20 {
		t.Fatalf("found %d internal patterns in pkg/contract, want the 20 or more there are: %v", len(patterns), patterns)
	}
	t.Logf("%d internal patterns, %d paths", len(patterns), len(paths))
	for name, p := range patterns {
		if !slices.ContainsFunc(internalapi.Routes, func(r route.Internal) bool { return r.Pattern() == p }) {
			t.Errorf("%s = %q is declared in no InternalRoutes", name, p)
		}
	}
	for name, p := range paths {
		if !slices.ContainsFunc(internalapi.Routes, func(r route.Internal) bool { return strings.HasPrefix(r.Path, p) }) {
			t.Errorf("%s = %q is the path of no declared internal route", name, p)
		}
	}
}

// TestInternalDeclarations: each declaration names its context, a
// summary and an answer, and no context declares a pattern twice.
func TestInternalDeclarations(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range internalapi.Routes {
		key := r.Service + " " + r.Pattern()
		if seen[key] {
			t.Errorf("%s is declared twice", key)
		}
		seen[key] = true
		if r.Service == "" || r.Summary == "" || r.Response == nil {
			t.Errorf("%s: service %q, summary %q, response %T: each is required", r.Pattern(), r.Service, r.Summary, r.Response)
		}
	}
	want := []string{"contacts", "contracts", "deals", "identity", "intake", "leads", "mail", "webhooks"}
	if diff := cmp.Diff(want, internalapi.Services()); diff != "" {
		t.Errorf("services (-want +got):\n%s", diff)
	}
}

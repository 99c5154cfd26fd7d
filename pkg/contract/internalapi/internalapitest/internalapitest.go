// Package internalapitest proves a service serves exactly the internal
// routes declared for it (internalapi.Of), as the declarations say: each
// service's TestInternalRoutes runs Check on its real handler, so a route
// mounted without a declaration, or declared and not mounted, fails there
// rather than slipping past the released documents' gate; its
// TestInternalAnswers calls each route with Answer, which holds the
// answer to the declared Go type, so the generated document says what
// the service sends.
package internalapitest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/contract/internalapi"
)

// Methods are the methods asked of every internal path.
var Methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// URL is a request path of a declared path: each {wildcard} is 1.
func URL(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segs[i] = "1"
		}
	}
	return strings.Join(segs, "/")
}

type problemBody struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
}

// ask sends method path without the internal secret: a routed internal
// route answers its guard's 401, an unrouted one httpx.Routes' 404 or 405.
func ask(h http.Handler, method, path string) (int, problemBody, string) {
	req := httptest.NewRequest(method, path, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var p problemBody
	_ = json.Unmarshal(rec.Body.Bytes(), &p)
	return rec.Code, p, rec.Header().Get("Content-Type")
}

// Check proves h, service's whole HTTP handler, serves every internal
// route declared for service and no other: asked without the internal
// secret, a declared route answers 401 unauthenticated (its guard: it is
// routed), and every other method of any context's internal path answers
// 404 not_found or 405 method_not_allowed, as problem+json, unless a
// declared route's wildcard takes it. A path no
// contract declares at all is what CheckSources and the contract
// packages' own test (every /internal/ constant declared) rule out.
func Check(t *testing.T, h http.Handler, service string) {
	t.Helper()
	own := internalapi.Of(service)
	if len(own) == 0 {
		t.Fatalf("no internal route is declared for %s", service)
	}
	// declared routes as service's mux routes them: a path of another
	// route may fall under one of its wildcards (GET /internal/leads/batch
	// under GET /internal/leads/{id}), and is then served by that one.
	declared := http.NewServeMux()
	for _, r := range own {
		declared.Handle(r.Pattern(), http.NotFoundHandler())
		status, p, ct := ask(h, r.Method, URL(r.Path))
		if status != http.StatusUnauthorized || p.Code != "unauthenticated" || ct != "application/problem+json" {
			t.Errorf("%s declared for %s: answered %d %q (%s) without the internal secret, want 401 unauthenticated: not mounted, or not behind the internal guard",
				r.Pattern(), service, status, p.Code, ct)
		}
	}
	var paths []string
	for _, r := range internalapi.Routes {
		paths = append(paths, r.Path)
	}
	slices.Sort(paths)
	for _, path := range slices.Compact(paths) {
		for _, m := range Methods {
			if _, p := declared.Handler(httptest.NewRequest(m, URL(path), nil)); p != "" {
				continue
			}
			status, p, ct := ask(h, m, URL(path))
			want := map[int]string{http.StatusNotFound: "not_found", http.StatusMethodNotAllowed: "method_not_allowed"}[status]
			if want == "" || p.Code != want || ct != "application/problem+json" {
				t.Errorf("%s %s is not declared for %s but answered %d %q (%s), want 404 not_found or 405 method_not_allowed: declare it in its contract package's InternalRoutes",
					m, path, service, status, p.Code, ct)
			}
		}
	}
}

// pattern is an internal ServeMux pattern or path spelled as a literal.
var pattern = regexp.MustCompile(`^([A-Z]+ )?/internal/`)

// CheckSources fails for every string literal in the non-test Go files
// under dir (a service's module) that spells an internal path or pattern:
// a service mounts internal routes on its contract package's constants
// only, which the contract test holds to the declarations, so a route
// Check cannot guess (a new path) cannot be mounted unseen.
func CheckSources(t *testing.T, dir string) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && pattern.MatchString(s) {
				t.Errorf("%s: %s spells an internal route: mount the contract package's constant, declared in its InternalRoutes",
					fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package mergehttp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi/mergehttp"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
)

const secret = "test-internal-secret-0123456789"

// serve mounts a move that records what it was asked and the channel its
// changes are recorded under, and answers moved.
func serve(t *testing.T, moved mergeapi.Moved) (http.Handler, *[]mergeapi.Move, *[]string) {
	t.Helper()
	var asked []mergeapi.Move
	var via []string
	mux := http.NewServeMux()
	mergehttp.Mount(mux, history.Internal(auth.RequireInternal(secret)), func(ctx context.Context, m mergeapi.Move) (mergeapi.Moved, error) {
		asked = append(asked, m)
		h := http.Header{}
		history.Propagate(ctx, h)
		via = append(via, h.Get(history.ViaHeader))
		return moved, nil
	})
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	return ops.Handler(httpx.Routes(mux)), &asked, &via
}

var requestID = regexp.MustCompile(`"request_id":"[^"]*"`)

func post(h http.Handler, path, body string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Internal-Token", secret)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func invalid(errors string) string {
	return `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,` +
		`"detail":"one or more fields are invalid","code":"validation_failed","request_id":"…",` +
		`"errors":[` + errors + `]}` + "\n"
}

// A move the contract allows reaches the context, recorded as via merge
// even when the caller named another channel (or none), and its counts
// are the answer; nil counts answer an empty object.
func TestMoveAnswersTheContextsCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		moved mergeapi.Moved
		via   []string
		want  string
	}{
		{"counts", mergeapi.Moved{"deals": 2}, nil, `{"data":{"deals":2}}` + "\n"},
		{"nothing of the kind", nil, []string{history.ViaHeader, "api"}, `{"data":{}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, asked, via := serve(t, tc.moved)
			rec := post(h, mergeapi.MovePath(9), `{"object":"contact","into":1,"merged":[2,3]}`, tc.via...)
			if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
				t.Fatalf("answer %d %s, want 200 %s", rec.Code, rec.Body, tc.want)
			}
			if diff := cmp.Diff([]mergeapi.Move{{Object: "contact", Into: 1, Merged: []int64{2, 3}}}, *asked); diff != "" {
				t.Errorf("move (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"merge"}, *via); diff != "" {
				t.Errorf("via (-want +got):\n%s", diff)
			}
		})
	}
}

// Every move no merge asks for is refused with the fields named, and the
// context is never asked.
func TestMoveRefusesBadBodies(t *testing.T) {
	t.Parallel()
	eleven := `[2,3,4,5,6,7,8,9,10,11,12]`
	for _, tc := range []struct {
		name, path, body, want string
		status                 int
	}{
		{"unknown object", mergeapi.MovePath(1), `{"object":"lead","into":1,"merged":[2]}`, invalid(
			`{"field":"object","message":"must be one of contact, company"}`), 422},
		{"no object", mergeapi.MovePath(1), `{"into":1,"merged":[2]}`, invalid(
			`{"field":"object","message":"is required"}`), 422},
		{"no survivor", mergeapi.MovePath(1), `{"object":"company","into":0,"merged":[2]}`, invalid(
			`{"field":"into","message":"must be a positive integer"}`), 422},
		{"negative survivor", mergeapi.MovePath(1), `{"object":"company","into":-4,"merged":[2]}`, invalid(
			`{"field":"into","message":"must be a positive integer"}`), 422},
		{"nothing merged", mergeapi.MovePath(1), `{"object":"contact","into":1,"merged":[]}`, invalid(
			`{"field":"merged","message":"is required"}`), 422},
		{"merged missing", mergeapi.MovePath(1), `{"object":"contact","into":1}`, invalid(
			`{"field":"merged","message":"is required"}`), 422},
		{"more than ten", mergeapi.MovePath(1), `{"object":"contact","into":1,"merged":` + eleven + `}`, invalid(
			`{"field":"merged","message":"must hold at most 10 ids"}`), 422},
		{"survivor merged", mergeapi.MovePath(1), `{"object":"contact","into":5,"merged":[4,5]}`, invalid(
			`{"field":"merged[1]","message":"must not be the survivor (into)"}`), 422},
		{"bad and twice", mergeapi.MovePath(1), `{"object":"contact","into":5,"merged":[4,0,4]}`, invalid(
			`{"field":"merged[1]","message":"must be a positive integer"},{"field":"merged[2]","message":"is listed twice"}`), 422},
		{"everything", mergeapi.MovePath(1), `{"object":"deal","into":0,"merged":[]}`, invalid(
			`{"field":"object","message":"must be one of contact, company"},{"field":"into","message":"must be a positive integer"},` +
				`{"field":"merged","message":"is required"}`), 422},
		{"wrong type", mergeapi.MovePath(1), `{"object":"contact","into":"1","merged":[2]}`,
			invalid(`{"field":"into","message":"must be an integer"}`), 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, asked, _ := serve(t, mergeapi.Moved{"deals": 1})
			rec := post(h, tc.path, tc.body)
			got := requestID.ReplaceAllString(rec.Body.String(), `"request_id":"…"`)
			if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("answer %d %q %s, want %d problem", rec.Code, rec.Header().Get("Content-Type"), rec.Body, tc.status)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if len(*asked) != 0 {
				t.Errorf("the context was asked %v", *asked)
			}
		})
	}
}

// Without the internal secret the route is not served to the caller.
func TestMoveNeedsTheInternalSecret(t *testing.T) {
	t.Parallel()
	h, asked, _ := serve(t, mergeapi.Moved{})
	req := httptest.NewRequest(http.MethodPost, mergeapi.MovePath(1), strings.NewReader(`{"object":"contact","into":1,"merged":[2]}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || len(*asked) != 0 {
		t.Errorf("answer %d %s (asked %v), want 401", rec.Code, rec.Body, *asked)
	}
}

// TestMain keeps access logs out of test output.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

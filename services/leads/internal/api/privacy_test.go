package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
)

// requestIDs is the one part of a problem body that differs per request.
var requestIDs = regexp.MustCompile(`"request_id":"[^"]*"`)

// exactly asserts the status and the exact bytes of an answer, a
// request_id aside.
func exactly(t *testing.T, r resp, status int, want string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	got := requestIDs.ReplaceAllString(string(r.body), `"request_id":"…"`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// privacyCall posts body to an internal privacy path with the secret.
func (e *env) privacyCall(path string, body any) resp {
	e.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Internal-Token", secret)
	return e.serve(req)
}

func (e *env) count(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestPrivacyRefusesBadSubjects: both routes refuse a subject without an
// address or with bad ids (422, the exact problem), and a call without the
// internal secret (401).
func TestPrivacyRefusesBadSubjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	invalid := func(field, msg string) string {
		return `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,` +
			`"detail":"one or more fields are invalid","code":"validation_failed","request_id":"…",` +
			`"errors":[{"field":"` + field + `","message":"` + msg + `"}]}` + "\n"
	}
	for name, c := range map[string]struct {
		body any
		want string
	}{
		"no email":     {map[string]any{}, invalid("email", "is required")},
		"empty email":  {map[string]any{"email": ""}, invalid("email", "is required")},
		"blank email":  {map[string]any{"email": " \t "}, invalid("email", "is required")},
		"zero lead id": {map[string]any{"email": "ann@example.com", "lead_ids": []int64{0}}, invalid("lead_ids", "must hold positive ids")},
	} {
		for _, path := range []string{privacyapi.PathExport, privacyapi.ErasurePath(1)} {
			t.Run(name+" "+path, func(t *testing.T) {
				t.Parallel()
				exactly(t, e.privacyCall(path, c.body), http.StatusUnprocessableEntity, c.want)
			})
		}
	}
	for _, path := range []string{privacyapi.PathExport, privacyapi.ErasurePath(1)} {
		wantProblem(t, e.do(http.MethodPost, path, e.admin, map[string]any{"email": "ann@example.com"}), http.StatusUnauthorized, "unauthenticated")
	}
	if n := e.count(`SELECT count(*) FROM idempotency_keys WHERE key = $1`, privacyapi.ErasureKey(1)); n != 0 {
		t.Errorf("a refused erasure stored %d answers", n)
	}
}

// TestPrivacyExportAndErase: the export answers the person's leads (any
// case of the address) with their notes and history; the erasure deletes
// them once per erasure id (a repeated call answers the same receipt and
// changes nothing), records its history via erasure, and an address held
// nowhere answers zeros.
func TestPrivacyExportAndErase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lead := func(first, email string) int64 {
		return e.createLead(map[string]any{"first_name": first, "last_name": "Smith", "email": email})
	}
	ann, annToo, bob := lead("Ann", "ann@example.com"), lead("Annie", "Ann@Example.com"), lead("Bob", "bob@example.com")
	if r := e.do(http.MethodPost, fmt.Sprintf("/leads/%d/notes", annToo), e.user, map[string]any{"content": "Prefers e-mail"}); r.status != http.StatusCreated {
		t.Fatalf("note: %d %s", r.status, r.body)
	}

	r := e.privacyCall(privacyapi.PathExport, privacyapi.Subject{Email: "  ANN@example.COM "})
	if r.status != http.StatusOK {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	var export struct {
		Data struct {
			LeadIDs []int64 `json:"lead_ids"`
			Data    struct {
				Leads []struct {
					ID    int64  `json:"id"`
					Email string `json:"email"`
				} `json:"leads"`
				Notes []struct {
					LeadID  int64  `json:"lead_id"`
					Content string `json:"content"`
				} `json:"notes"`
				Tasks   []json.RawMessage `json:"tasks"`
				History []json.RawMessage `json:"history"`
			} `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &export); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{ann, annToo}, export.Data.LeadIDs); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	got := export.Data.Data
	if len(got.Leads) != 2 || got.Leads[0].Email != "ann@example.com" || got.Leads[1].Email != "Ann@Example.com" ||
		len(got.Notes) != 1 || got.Notes[0].LeadID != annToo || got.Notes[0].Content != "Prefers e-mail" ||
		len(got.Tasks) != 0 || len(got.History) != 3 {
		t.Errorf("export: %s", r.body)
	}

	// The erasure: 2 leads and a note; their 3 entries and the 3 deletes'
	// redacted.
	receipt := fmt.Sprintf(`{"data":{"lead_ids":[%d,%d],"receipt":{"context":"leads","status":"completed",`+
		`"erased":{"leads":2,"notes":1,"tasks":0},"redacted":{"events":0,"history":6,"leads":0},"kept":[]}}}`+"\n", ann, annToo)
	exactly(t, e.privacyCall(privacyapi.ErasurePath(7), privacyapi.Subject{Email: "ann@example.com"}), http.StatusOK, receipt)
	history, events := e.count(`SELECT count(*) FROM history`), e.count(`SELECT count(*) FROM outbox`)
	if n := e.count(`SELECT count(*) FROM history WHERE via = 'erasure' AND action = 'deleted'`); n != 3 {
		t.Errorf("%d deletes recorded via erasure, want 3", n)
	}
	// The same erasure again: the same receipt, nothing more happens.
	exactly(t, e.privacyCall(privacyapi.ErasurePath(7), privacyapi.Subject{Email: "ann@example.com"}), http.StatusOK, receipt)
	if h, o := e.count(`SELECT count(*) FROM history`), e.count(`SELECT count(*) FROM outbox`); h != history || o != events {
		t.Errorf("the repeated erasure wrote %d history entries and %d events", h-history, o-events)
	}
	if r := e.do(http.MethodGet, fmt.Sprintf("/leads/%d", ann), e.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("erased lead: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodGet, fmt.Sprintf("/leads/%d", bob), e.admin, nil); r.status != http.StatusOK {
		t.Errorf("another lead: %d %s", r.status, r.body)
	}

	// Held nowhere (now): zeros, and an export without data.
	zeros := `{"data":{"receipt":{"context":"leads","status":"completed",` +
		`"erased":{"leads":0,"notes":0,"tasks":0},"redacted":{"events":0,"history":0,"leads":0},"kept":[]}}}` + "\n"
	for _, c := range []struct {
		id    int64
		email string
	}{{8, "ann@example.com"}, {9, "nobody@example.com"}} {
		exactly(t, e.privacyCall(privacyapi.ErasurePath(c.id), privacyapi.Subject{Email: c.email}), http.StatusOK, zeros)
		exactly(t, e.privacyCall(privacyapi.PathExport, privacyapi.Subject{Email: c.email}), http.StatusOK,
			`{"data":{"data":{"leads":[],"notes":[],"tasks":[],"history":[],"custom_field_values":[]}}}`+"\n")
	}
}

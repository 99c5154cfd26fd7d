package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
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
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	got := requestIDs.ReplaceAllString(string(r.Raw), `"request_id":"…"`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
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
		"no email":      {map[string]any{}, invalid("email", "is required")},
		"empty email":   {map[string]any{"email": ""}, invalid("email", "is required")},
		"blank email":   {map[string]any{"email": "   "}, invalid("email", "is required")},
		"zero id":       {map[string]any{"email": "ann@example.com", "contact_ids": []int64{0}}, invalid("contact_ids", "must hold positive ids")},
		"negative lead": {map[string]any{"email": "ann@example.com", "lead_ids": []int64{-3}}, invalid("lead_ids", "must hold positive ids")},
	} {
		for _, path := range []string{privacyapi.PathExport, privacyapi.ErasurePath(1)} {
			t.Run(name+" "+path, func(t *testing.T) {
				t.Parallel()
				exactly(t, e.internal(t, http.MethodPost, path, "", c.body), http.StatusUnprocessableEntity, c.want)
			})
		}
	}
	for _, path := range []string{privacyapi.PathExport, privacyapi.ErasurePath(1)} {
		r := e.do(t, http.MethodPost, path, e.admin, map[string]any{"email": "ann@example.com"})
		wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
	}
	// The refused erasure stored nothing under its id: it runs later.
	if n := e.count(t, `SELECT count(*) FROM idempotency_keys WHERE key = $1`, privacyapi.ErasureKey(1)); n != 0 {
		t.Errorf("a refused erasure stored %d answers", n)
	}
}

// TestPrivacyExportAndErase: the export answers the person's contacts
// (any case of the address) with their notes and history; the erasure
// deletes them once per erasure id (a repeated call answers the same
// receipt and changes nothing), records its history via erasure, and an
// address held nowhere answers zeros.
func TestPrivacyExportAndErase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	create := func(first, email string) int64 {
		t.Helper()
		r := e.do(t, http.MethodPost, "/contacts", e.admin, map[string]any{"first_name": first, "last_name": "Smith", "email": email})
		wantStatus(t, r, http.StatusCreated)
		return id(t, r)
	}
	ann, annToo, bob := create("Ann", "ann@example.com"), create("Annie", "Ann@Example.com"), create("Bob", "bob@example.com")
	wantStatus(t, e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/notes", ann), e.admin, map[string]any{"content": "Prefers e-mail"}),
		http.StatusCreated)

	r := e.internal(t, http.MethodPost, privacyapi.PathExport, "", privacyapi.Subject{Email: "  ANN@example.COM "})
	wantStatus(t, r, http.StatusOK)
	var export struct {
		Data struct {
			ContactIDs []int64 `json:"contact_ids"`
			Data       struct {
				Contacts []struct {
					ID    int64  `json:"id"`
					Email string `json:"email"`
				} `json:"contacts"`
				Notes []struct {
					ContactID int64  `json:"contact_id"`
					Content   string `json:"content"`
				} `json:"notes"`
				Tasks   []json.RawMessage `json:"tasks"`
				History []struct {
					Object string `json:"object"`
					Action string `json:"action"`
				} `json:"history"`
			} `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Raw, &export); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{ann, annToo}, export.Data.ContactIDs); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	got := export.Data.Data
	if len(got.Contacts) != 2 || got.Contacts[0].Email != "ann@example.com" || got.Contacts[1].Email != "Ann@Example.com" ||
		len(got.Notes) != 1 || got.Notes[0].ContactID != ann || got.Notes[0].Content != "Prefers e-mail" ||
		len(got.Tasks) != 0 || len(got.History) != 3 {
		t.Errorf("export: %s", r.Raw)
	}

	// The erasure: 2 contacts and a note; their 3 entries and the 3
	// deletes' redacted.
	receipt := fmt.Sprintf(`{"data":{"contact_ids":[%d,%d],"receipt":{"context":"contacts","status":"completed",`+
		`"erased":{"contacts":2,"notes":1,"tasks":0},"redacted":{"contacts":0,"events":0,"history":6},"kept":[]}}}`+"\n", ann, annToo)
	exactly(t, e.internal(t, http.MethodPost, privacyapi.ErasurePath(7), "", privacyapi.Subject{Email: "ann@example.com"}),
		http.StatusOK, receipt)
	history := e.count(t, `SELECT count(*) FROM history`)
	events := e.count(t, `SELECT count(*) FROM outbox`)
	if n := e.count(t, `SELECT count(*) FROM history WHERE via = 'erasure' AND action = 'deleted'`); n != 3 {
		t.Errorf("%d deletes recorded via erasure, want 3", n)
	}
	// The same erasure again: the same receipt, nothing more happens.
	exactly(t, e.internal(t, http.MethodPost, privacyapi.ErasurePath(7), "", privacyapi.Subject{Email: "ann@example.com"}),
		http.StatusOK, receipt)
	if h, o := e.count(t, `SELECT count(*) FROM history`), e.count(t, `SELECT count(*) FROM outbox`); h != history || o != events {
		t.Errorf("the repeated erasure wrote %d history entries and %d events", h-history, o-events)
	}
	wantStatus(t, e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d", ann), e.admin, nil), http.StatusNotFound)
	wantStatus(t, e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d", bob), e.admin, nil), http.StatusOK)

	// Held nowhere (now): zeros, and an export without data.
	zeros := `{"data":{"receipt":{"context":"contacts","status":"completed",` +
		`"erased":{"contacts":0,"notes":0,"tasks":0},"redacted":{"contacts":0,"events":0,"history":0},"kept":[]}}}` + "\n"
	for _, c := range []struct {
		id    int64
		email string
	}{{8, "ann@example.com"}, {9, "nobody@example.com"}} {
		exactly(t, e.internal(t, http.MethodPost, privacyapi.ErasurePath(c.id), "", privacyapi.Subject{Email: c.email}), http.StatusOK, zeros)
		exactly(t, e.internal(t, http.MethodPost, privacyapi.PathExport, "", privacyapi.Subject{Email: c.email}), http.StatusOK,
			`{"data":{"data":{"contacts":[],"notes":[],"tasks":[],"history":[],"custom_field_values":[]}}}`+"\n")
	}
}

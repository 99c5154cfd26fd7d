package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// event is one outbox row of the contracts stream.
type event struct {
	Type string
	Data map[string]any
}

// lastEvent is the newest outbox row's id (0 when there is none).
func (e *env) lastEvent(t *testing.T) int64 {
	t.Helper()
	var id int64
	if err := e.db.QueryRow(context.Background(), `SELECT coalesce(max(id), 0) FROM outbox`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// events returns the outbox rows after since, in order; id > 0 keeps
// only those about that contract. Every row must be on crm:events:contracts.
func (e *env) events(t *testing.T, since, id int64) []event {
	t.Helper()
	about := ""
	if id > 0 {
		about = strconv.FormatInt(id, 10)
	}
	rows, err := e.db.Query(context.Background(), `SELECT stream, type, aggregate_id, payload::text FROM outbox
		WHERE id > $1 AND ($2 = '' OR aggregate_id = $2) ORDER BY id`, since, about)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var stream, typ, agg, payload string
		if err := rows.Scan(&stream, &typ, &agg, &payload); err != nil {
			t.Fatal(err)
		}
		if stream != "crm:events:contracts" {
			t.Errorf("event %s on stream %q", typ, stream)
		}
		ev := event{Type: typ}
		if err := json.Unmarshal([]byte(payload), &ev.Data); err != nil {
			t.Fatalf("payload of %s: %v", typ, err)
		}
		if want := fmt.Sprint(ev.Data["id"]); id > 0 && want != strconv.FormatInt(id, 10) {
			t.Errorf("%s about contract %s carries id %s", typ, agg, want)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantEvents checks that the events about contract id after since are
// exactly types, in order, each carrying the contract as GET answers it
// now (contract.deleted: only its id).
func (e *env) wantEvents(t *testing.T, since, id int64, types ...string) {
	t.Helper()
	got := e.events(t, since, id)
	var gotTypes []string
	for _, ev := range got {
		gotTypes = append(gotTypes, ev.Type)
	}
	if diff := cmp.Diff(types, gotTypes); diff != "" {
		t.Fatalf("events of contract %d (-want +got):\n%s", id, diff)
	}
	var record map[string]any
	for _, ev := range got {
		want := map[string]any{"id": float64(id)}
		if ev.Type != contracts.EventDeleted {
			if record == nil {
				r := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", id), e.user, nil)
				if r.status != http.StatusOK {
					t.Fatalf("get contract %d: %d %s", id, r.status, r.body)
				}
				record = r.data(t)
			}
			want = record
		}
		if diff := cmp.Diff(want, ev.Data); diff != "" {
			t.Errorf("data of %s (-want +got):\n%s", ev.Type, diff)
		}
	}
}

// put sends a PUT of the contract's current deal, template and title
// with extra on top.
func (e *env) put(t *testing.T, id int64, extra map[string]any) response {
	t.Helper()
	path := fmt.Sprintf("/contracts/%d", id)
	c := e.do(t, http.MethodGet, path, e.user, nil).data(t)
	body := map[string]any{"deal_id": c["deal_id"], "template_id": c["template_id"], "title": c["title"]}
	for k, v := range extra {
		body[k] = v
	}
	return e.do(t, http.MethodPut, path, e.user, body)
}

// contractIn builds a contract of deal 1 in a given state for the event
// tests; past dates make it due for the expiry job.
func (e *env) contractIn(t *testing.T, tpl int64, state string) int64 {
	t.Helper()
	past := map[string]any{"start_date": "2019-01-31", "end_date": "2020-01-31"}
	c := e.createContract(t, 1, tpl, past)
	id := idOf(c)
	to := func(s string) {
		setStatus(t, e, e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", id), e.user, nil).data(t), s)
	}
	upload := func() {
		if r := e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("copy of "+strconv.FormatInt(id, 10))); r.status != http.StatusCreated {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
	}
	switch state {
	case "draft":
	case "active":
		to("active")
	case "executed without copy":
		to("active")
		to("executed")
	case "executed with copy":
		to("active")
		upload()
	case "terminated with copy":
		to("active")
		upload()
		to("terminated")
	case "expired":
		to("active")
		to("expired")
	case "archived":
		to("archived")
	default:
		t.Fatalf("unknown state %q", state)
	}
	return id
}

// TestEventsOfEveryWrite: each write path of a contract records exactly
// its events, in order, in the outbox, each with the contract as GET
// /contracts/{id} answers it after the write.
func TestEventsOfEveryWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	const (
		created  = contracts.EventCreated
		updated  = contracts.EventUpdated
		deleted  = contracts.EventDeleted
		status   = contracts.EventStatusChanged
		executed = contracts.EventExecuted
	)
	tests := []struct {
		name  string
		state string
		act   func(t *testing.T, id int64) response
		code  int
		want  []string
	}{
		{"PUT title", "draft", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"title": "Renamed"})
		}, http.StatusOK, []string{updated}},
		{"PUT content", "active", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"content": "<p>{{deal.title}} by hand</p>"})
		}, http.StatusOK, []string{updated}},
		{"PUT changing nothing", "draft", func(t *testing.T, id int64) response {
			return e.put(t, id, nil)
		}, http.StatusOK, []string{updated}},
		{"PUT the current status", "active", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"status": "active"})
		}, http.StatusOK, []string{updated}},
		{"PUT status only", "draft", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"status": "active"})
		}, http.StatusOK, []string{status}},
		{"PUT status to executed without a copy", "active", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"status": "executed"})
		}, http.StatusOK, []string{status}},
		{"PUT status and title", "draft", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"status": "active", "title": "Renamed"})
		}, http.StatusOK, []string{status, updated}},
		{"PUT reactivating an expired contract moves its termination date", "expired", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"status": "active"})
		}, http.StatusOK, []string{status, updated}},
		{"regenerate", "draft", func(t *testing.T, id int64) response {
			return e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d/regenerate", id), e.user, nil)
		}, http.StatusOK, []string{updated}},
		{"upload the signed copy of an active contract", "active", func(t *testing.T, id int64) response {
			return e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("signed"))
		}, http.StatusCreated, []string{status, executed}},
		{"upload the signed copy of a draft", "draft", func(t *testing.T, id int64) response {
			return e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("signed"))
		}, http.StatusCreated, []string{status, executed}},
		{"upload the signed copy of a contract already executed", "executed without copy", func(t *testing.T, id int64) response {
			return e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("signed"))
		}, http.StatusCreated, []string{executed}},
		{"delete the signed copy of an executed contract", "executed with copy", func(t *testing.T, id int64) response {
			return e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d/executed", id), e.admin, nil)
		}, http.StatusOK, []string{status, updated}},
		{"delete the signed copy of a terminated contract", "terminated with copy", func(t *testing.T, id int64) response {
			return e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d/executed", id), e.admin, nil)
		}, http.StatusOK, []string{updated}},
		{"delete", "active", func(t *testing.T, id int64) response {
			return e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d", id), e.user, nil)
		}, http.StatusOK, []string{deleted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := e.contractIn(t, tpl, tc.state)
			since := e.lastEvent(t)
			if r := tc.act(t, id); r.status != tc.code {
				t.Fatalf("status %d, want %d: %s", r.status, tc.code, r.body)
			}
			e.wantEvents(t, since, id, tc.want...)
		})
	}

	t.Run("create", func(t *testing.T) {
		t.Parallel()
		since := e.lastEvent(t)
		id := idOf(e.createContract(t, 1, tpl, map[string]any{"partner_ref": "PO-9"}))
		e.wantEvents(t, since, id, created)
	})
}

// TestEventsOfTheExpiryJob: an expiry is a status change, a renewal an
// update (its termination date moves); the contracts the run leaves
// alone record nothing.
func TestEventsOfTheExpiryJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	expiring := e.contractIn(t, tpl, "executed with copy")
	renewing := idOf(setStatus(t, e, e.createContract(t, 1, tpl, map[string]any{
		"start_date": "2019-01-31", "end_date": "2020-01-31", "auto_renew": true, "term_months": 12}), "active"))
	untouched := e.contractIn(t, tpl, "draft")
	since := e.lastEvent(t)

	res, err := e.svc.RunExpiry(context.Background(), contracts.Day(time.Now()))
	if err != nil || res != (contracts.ExpiryResult{Expired: 1, Renewed: 1}) {
		t.Fatalf("RunExpiry = %+v, %v", res, err)
	}
	e.wantEvents(t, since, expiring, contracts.EventStatusChanged)
	e.wantEvents(t, since, renewing, contracts.EventUpdated)
	e.wantEvents(t, since, untouched)
	if got := e.events(t, since, expiring)[0].Data["status"]; got != "expired" {
		t.Errorf("expired contract's event status = %v", got)
	}
}

// TestRefusedWritesRecordNothing: a write refused by validation, the
// status rules or the signed copy's rules records no event.
func TestRefusedWritesRecordNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	tests := []struct {
		name  string
		state string
		act   func(t *testing.T, id int64) response
		code  int
	}{
		{"create with an unknown deal", "draft", func(t *testing.T, _ int64) response {
			return e.do(t, http.MethodPost, "/contracts", e.user, map[string]any{"deal_id": 999, "template_id": tpl, "title": "x"})
		}, http.StatusUnprocessableEntity},
		{"PUT a blank title", "draft", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"title": " "})
		}, http.StatusUnprocessableEntity},
		{"PUT an end before the start", "active", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"start_date": "2026-05-01", "end_date": "2026-04-30", "status": "executed"})
		}, http.StatusUnprocessableEntity},
		{"PUT a forbidden transition", "draft", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"status": "executed", "title": "Renamed"})
		}, http.StatusConflict},
		{"PUT content of an executed contract", "executed with copy", func(t *testing.T, id int64) response {
			return e.put(t, id, map[string]any{"content": "<p>changed</p>"})
		}, http.StatusConflict},
		{"regenerate an executed contract", "executed with copy", func(t *testing.T, id int64) response {
			return e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d/regenerate", id), e.user, nil)
		}, http.StatusConflict},
		{"upload over a signed copy", "executed with copy", func(t *testing.T, id int64) response {
			return e.uploadPDF(t, id, e.user, "again.pdf", pdfBytes("again"))
		}, http.StatusConflict},
		{"upload to an archived contract", "archived", func(t *testing.T, id int64) response {
			return e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("signed"))
		}, http.StatusConflict},
		{"upload a file that is not a PDF", "active", func(t *testing.T, id int64) response {
			return e.uploadPDF(t, id, e.user, "signed.pdf", []byte("not a pdf"))
		}, http.StatusUnsupportedMediaType},
		{"delete a signed copy there is not", "active", func(t *testing.T, id int64) response {
			return e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d/executed", id), e.admin, nil)
		}, http.StatusNotFound},
		{"delete a contract with a signed copy", "executed with copy", func(t *testing.T, id int64) response {
			return e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d", id), e.user, nil)
		}, http.StatusConflict},
	}
	// One at a time: a refused create has no contract to filter on, so
	// every case must see no event at all after its start.
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := e.contractIn(t, tpl, tc.state)
			since := e.lastEvent(t)
			if r := tc.act(t, id); r.status != tc.code {
				t.Fatalf("status %d, want %d: %s", r.status, tc.code, r.body)
			}
			if got := e.events(t, since, 0); len(got) != 0 {
				t.Errorf("refused write recorded %d events: %+v", len(got), got)
			}
		})
	}
}

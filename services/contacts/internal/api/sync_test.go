package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSyncBadInput: updated_since that is not RFC 3339, and a cursor
// outside the sync order, are 422s naming the parameter, on both lists and
// the export.
func TestSyncBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rfc := "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"
	cursor := "requires updated_since, sort_by=updated_at and sort_dir=asc"
	tests := []struct {
		path, field, message string
	}{
		{"/contacts?updated_since=2026-01-02", "updated_since", rfc},
		{"/contacts?updated_since=yesterday", "updated_since", rfc},
		{"/contacts?updated_since=2026-01-02T10:00:00", "updated_since", rfc},
		{"/companies?updated_since=2026-13-01T00:00:00Z", "updated_since", rfc},
		{"/contacts/export?updated_since=1700000000", "updated_since", rfc},
		{"/contacts?updated_since=2026-01-02T10:00:00Z&after_id=4", "after_id", cursor},
		{"/companies?sort_by=updated_at&after_id=4", "after_id", cursor},
	}
	for _, tt := range tests {
		r := e.do(t, "GET", tt.path, e.admin, nil)
		wantProblem(t, r, 422, "validation_failed", tt.field)
		want := []any{map[string]any{"field": tt.field, "message": tt.message}}
		if diff := cmp.Diff(want, r.Body["errors"]); diff != "" {
			t.Errorf("%s errors (-want +got):\n%s", tt.path, diff)
		}
	}
}

// syncRecord is one record a sync read: its id and updated_at.
type syncRecord struct {
	ID        int64
	UpdatedAt string
}

// syncAll runs the documented incremental sync of path from since: pages
// of per ordered by (updated_at, id), each asking for what follows the last
// record seen. between runs after every page, to change records mid-sync.
func syncAll(t *testing.T, e *env, path, since string, per int, between func()) []syncRecord {
	t.Helper()
	var seen []syncRecord
	cursor := url.Values{"updated_since": {since}, "sort_by": {"updated_at"}, "sort_dir": {"asc"}, "per_page": {fmt.Sprint(per)}}
	for range 1000 {
		r := e.do(t, "GET", path+"?"+cursor.Encode(), e.admin, nil)
		wantStatus(t, r, 200)
		data := r.Body["data"].([]any)
		for _, d := range data {
			m := d.(map[string]any)
			seen = append(seen, syncRecord{int64(m["id"].(float64)), m["updated_at"].(string)})
		}
		if len(data) < per {
			return seen
		}
		last := seen[len(seen)-1]
		cursor.Set("updated_since", last.UpdatedAt)
		cursor.Set("after_id", fmt.Sprint(last.ID))
		between()
	}
	t.Fatal("sync did not finish")
	return nil
}

// TestSyncWhileWritesContinue pages through every contact changed since T
// while other requests keep updating contacts, both ones the sync already
// passed and ones still ahead. No contact changed before the sync started
// may be missed, and one updated during the sync is seen again, after its
// old place, with its new updated_at.
func TestSyncWhileWritesContinue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Before", "last_name": "Sync"}))
	time.Sleep(2 * time.Millisecond)
	since := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	const n = 40
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": fmt.Sprintf("C%02d", i), "last_name": "Sync"}))
	}

	// A writer updating contacts for the whole sync, round-robin over all.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	writes := 0
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			req := fmt.Sprintf("/contacts/%d", ids[(i*7)%n])
			if r := e.serveQuiet("PUT", req, e.user, map[string]any{"first_name": "W", "last_name": "Sync", "job_title": fmt.Sprintf("w%d", i)}); r != 200 {
				t.Errorf("background PUT %s: %d", req, r)
				return
			}
			writes++
		}
	}()
	page := 0
	seen := syncAll(t, e, "/contacts", since, 5, func() {
		// Deterministically, after every page: the first contact (long
		// passed) and one far ahead change.
		page++
		for _, c := range []int64{ids[0], ids[n-1-page%n]} {
			wantStatus(t, e.do(t, "PUT", fmt.Sprintf("/contacts/%d", c), e.user, map[string]any{"first_name": "M", "last_name": "Sync", "mobile": fmt.Sprint(page)}), 200)
		}
	})
	stop()
	wg.Wait()

	got := map[int64]int{}
	for _, r := range seen {
		got[r.ID]++
	}
	if got[old] != 0 {
		t.Errorf("contact %d changed before updated_since was returned", old)
	}
	for _, c := range ids {
		if got[c] == 0 {
			t.Errorf("contact %d, changed before the sync started, was missed (%d pages, %d background writes)", c, page, writes)
		}
	}
	if got[ids[0]] < 2 {
		t.Errorf("contact %d updated after it was read was seen %d times, want it again at the end", ids[0], got[ids[0]])
	}
	// The sync reads in strictly increasing (updated_at, id) order.
	for i := 1; i < len(seen); i++ {
		if seen[i].UpdatedAt < seen[i-1].UpdatedAt || seen[i].UpdatedAt == seen[i-1].UpdatedAt && seen[i].ID <= seen[i-1].ID {
			t.Fatalf("sync order broken at %d: %v then %v", i, seen[i-1], seen[i])
		}
	}
}

// serveQuiet sends a JSON request from a goroutine other than the test's
// and returns only the status (t.Fatal must not be called there).
func (e *env) serveQuiet(method, path, token string, body any) int {
	b, err := json.Marshal(body)
	if err != nil {
		return 0
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec.Code
}

// TestCompanyRenameMovesContacts: a company's new name reaches its
// contacts' company_name, so those contacts count as updated and a sync
// since before the rename returns them (and the company) with the new name.
func TestCompanyRenameMovesContacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	co := id(t, e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Acme"}))
	linked := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "In", "last_name": "Acme", "company_id": co}))
	other := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Not", "last_name": "Linked"}))
	time.Sleep(2 * time.Millisecond)
	since := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	wantStatus(t, e.do(t, "PUT", fmt.Sprintf("/companies/%d", co), e.user, map[string]any{"name": "Acme Renamed"}), 200)

	for _, tt := range []struct {
		path string
		want []any
	}{
		{"/contacts", []any{float64(linked)}},
		{"/companies", []any{float64(co)}},
	} {
		r := e.do(t, "GET", tt.path+"?sort_by=updated_at&updated_since="+url.QueryEscape(since), e.user, nil)
		wantStatus(t, r, 200)
		var got []any
		for _, d := range r.Body["data"].([]any) {
			got = append(got, d.(map[string]any)["id"])
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s changed since the rename (-want +got):\n%s", tt.path, diff)
		}
	}
	// The export takes the same filter: the header and the one changed row.
	r := e.do(t, "GET", "/contacts/export?sort_by=updated_at&updated_since="+url.QueryEscape(since), e.admin, nil)
	wantStatus(t, r, 200)
	rows := strings.Split(strings.TrimSuffix(string(r.Raw), "\n"), "\n")
	if len(rows) != 2 || !strings.HasPrefix(rows[1], fmt.Sprintf("%d,In,Acme,", linked)) {
		t.Errorf("export since the rename: %q", r.Raw)
	}
	c := dataOf(t, e.do(t, "GET", fmt.Sprintf("/contacts/%d", linked), e.user, nil))
	if c["company_name"] != "Acme Renamed" || c["updated_at"].(string) < since {
		t.Errorf("renamed company's contact: company_name %v, updated_at %v (sync since %s)", c["company_name"], c["updated_at"], since)
	}
	if o := dataOf(t, e.do(t, "GET", fmt.Sprintf("/contacts/%d", other), e.user, nil)); o["updated_at"].(string) >= since {
		t.Errorf("unrelated contact moved: updated_at %v", o["updated_at"])
	}
}

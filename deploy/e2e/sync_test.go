package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// syncSince returns "now" in the API's timestamp form, a little after the
// records created so far: the start of a sync.
func syncSince() string {
	time.Sleep(2 * time.Millisecond)
	return time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
}

// syncAll runs the incremental sync documented in docs/api.md through the
// gateway: updated_since=T&sort_by=updated_at&sort_dir=asc, then after each
// full page the same with updated_since and after_id of its last record.
// It returns how often each id was seen; between runs after every page.
func syncAll(t *testing.T, c *Client, path, since string, per int, between func()) map[int64]int {
	t.Helper()
	seen := map[int64]int{}
	q := url.Values{"updated_since": {since}, "sort_by": {"updated_at"}, "sort_dir": {"asc"}, "per_page": {fmt.Sprint(per)}}
	lastAt, lastID := "", int64(0)
	for range 10000 {
		r := must(t, http.StatusOK)(c.Do("GET", path+"?"+q.Encode(), nil))
		data, _ := r.JSON["data"].([]any)
		for _, d := range data {
			m := d.(map[string]any)
			at, id := m["updated_at"].(string), int64(m["id"].(float64))
			if at < lastAt || at == lastAt && id <= lastID {
				t.Fatalf("%s: order broken: (%s, %d) after (%s, %d)", path, at, id, lastAt, lastID)
			}
			lastAt, lastID = at, id
			seen[id]++
		}
		if len(data) < per {
			return seen
		}
		q.Set("updated_since", lastAt)
		q.Set("after_id", fmt.Sprint(lastID))
		between()
	}
	t.Fatalf("%s: sync did not finish", path)
	return nil
}

// TestIncrementalSyncWhileWritesContinue syncs every contact changed since
// T through the gateway while another client keeps updating the same
// contacts, and the test itself updates one it already read and one still
// ahead after every page: no contact changed before the sync started is
// missed, and the one changed after it was read comes again at the end.
func TestIncrementalSyncWhileWritesContinue(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	before := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Before", "last_name": "Sync"})).ID()
	since := syncSince()
	const n = 30
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": fmt.Sprintf("S%02d", i), "last_name": "Sync"})).ID()
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Paced, and at most 60 writes: the admin's per-user rate limit is
		// shared with every other test of the run.
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 60; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			r, err := adm.Do("PUT", fmt.Sprintf("/contacts/%d", ids[(i*7)%n]), map[string]any{"first_name": "W", "last_name": "Sync", "job_title": fmt.Sprint(i)})
			if err != nil || r.Status != http.StatusOK {
				t.Errorf("background update: %v %v", r, err)
				return
			}
		}
	}()
	page := 0
	seen := syncAll(t, adm, "/contacts", since, 4, func() {
		page++
		for _, id := range []int64{ids[0], ids[n-1-page%n]} {
			must(t, http.StatusOK)(adm.Do("PUT", fmt.Sprintf("/contacts/%d", id), map[string]any{"first_name": "P", "last_name": "Sync", "mobile": fmt.Sprint(page)}))
		}
	})
	close(stop)
	wg.Wait()

	if seen[before] != 0 {
		t.Errorf("contact %d, changed before updated_since, was returned", before)
	}
	for _, id := range ids {
		if seen[id] == 0 {
			t.Errorf("contact %d, changed before the sync started, was missed (%d pages)", id, page)
		}
	}
	if seen[ids[0]] < 2 {
		t.Errorf("contact %d, updated after it was read, was seen %d times; want it again at the end", ids[0], seen[ids[0]])
	}
}

// TestSyncEveryList: each list an integration syncs (contacts, companies,
// leads, deals, contracts) answers the sync query through the gateway with
// the records changed since T, and refuses an updated_since that is not
// RFC 3339 with a 422 naming it.
func TestSyncEveryList(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	since := syncSince()
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Sync Co ")}))
	ct := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Sync", "last_name": "Contact", "company_id": co.ID()}))
	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{"first_name": "Sync", "last_name": "Lead"}))
	deal := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": uniq("Sync deal "), "company_id": co.ID()}))
	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{"name": uniq("Sync tpl "), "content": "<p>{{deal.title}}</p>"}))
	contract := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "Sync MSA"}))
	// A company rename reaches the contact (and, through contacts' event,
	// the deal) as a change too.
	renamed := syncSince()
	must(t, http.StatusOK)(adm.Do("PUT", fmt.Sprintf("/companies/%d", co.ID()), map[string]any{"name": uniq("Sync Co renamed ")}))

	for _, tc := range []struct {
		path string
		id   int64
	}{
		{"/contacts", ct.ID()}, {"/companies", co.ID()}, {"/leads", lead.ID()}, {"/deals", deal.ID()}, {"/contracts", contract.ID()},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if seen := syncAll(t, adm, tc.path, since, 100, func() {}); seen[tc.id] != 1 {
				t.Errorf("record %d seen %d times since %s, want once", tc.id, seen[tc.id], since)
			}
			r := must(t, http.StatusUnprocessableEntity)(adm.Do("GET", tc.path+"?sort_by=updated_at&updated_since=2026-01-02", nil))
			wantProblemBody(t, r, http.StatusUnprocessableEntity, "validation_failed", []string{"updated_since"})
		})
	}
	eventually(t, "company rename reaches the deal as a change", func() error {
		if seen := syncAll(t, adm, "/deals", renamed, 100, func() {}); seen[deal.ID()] != 1 {
			return fmt.Errorf("deal %d not changed since %s", deal.ID(), renamed)
		}
		return nil
	})
	if seen := syncAll(t, adm, "/contacts", renamed, 100, func() {}); seen[ct.ID()] != 1 {
		t.Errorf("contact %d of the renamed company not changed since %s", ct.ID(), renamed)
	}
}

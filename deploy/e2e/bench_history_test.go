package e2e

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkHistory, at the contacts the other benchmarks leave (seeded
// here when run alone):
//
//   - contact creates and updates through the gateway with the history
//     triggers on and off, alternating rounds: target on/off ≥ 0.9;
//
//   - the newest page of a contact with 10,000 history entries against a
//     plain list page (GET /contacts?per_page=25), same run: target ≤ 2×.
//
//     CRM_BENCH_OUT=/tmp/history.md go test -count=1 -run '^$' -bench '^BenchmarkHistory$' -benchtime 1x -timeout 60m ./deploy/e2e/
func BenchmarkHistory(b *testing.B) {
	c := superuser(b)
	seedContacts(b, c, benchRows())
	seedContactCustomFields(b, c, benchAdmin(b)) // the writes set cf tier
	adm := benchAdmin(b)
	ratio := benchTriggerWrites(b, c, adm, "record history's triggers",
		[]string{"contacts_history_ins", "contacts_history_upd", "contacts_history_del"})
	b.ReportMetric(ratio, "on/off")

	r, err := adm.Do("POST", "/contacts", map[string]any{"first_name": "Long", "last_name": "History"})
	if err != nil || r.Status != 201 {
		b.Fatalf("create: %v %v", r, err)
	}
	id := r.ID()
	// 10,000 updates, each an entry (one statement per update, as the API
	// makes them).
	// The schema's triggers name its tables unqualified, as the service does.
	exec1(b, c, `SET search_path = contacts, public`)
	exec1(b, c, fmt.Sprintf(`DO $$ BEGIN FOR i IN 1..10000 LOOP
		UPDATE contacts SET job_title = 'Title ' || i WHERE id = %d; END LOOP; END $$`, id))
	exec1(b, c, `RESET search_path`)
	exec1(b, c, `ANALYZE contacts.history`)
	get := func(path string) func() error {
		return func() error {
			r, err := adm.Do("GET", path, nil)
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("%s: %s", path, r)
			}
			return err
		}
	}
	hist, list := fmt.Sprintf("/contacts/%d/history?per_page=25", id), "/contacts?per_page=25"
	for _, p := range []string{hist, list} { // warm
		if err := get(p)(); err != nil {
			b.Fatal(err)
		}
	}
	// Interleaved, so both see the same machine.
	var h, l []time.Duration
	for range 100 {
		h = append(h, latencies(b, 1, get(hist))...)
		l = append(l, latencies(b, 1, get(list))...)
	}
	hp, lp := pct(h, 0.95), pct(l, 0.95)
	ratio = float64(hp) / float64(lp)
	report(b, "Newest history page of a contact with 10,000 entries against a plain list page (through the gateway)",
		[]string{"request", "p95 ms", "ratio"}, [][]string{
			{"`GET " + hist + "`", ms(hp), fmt.Sprintf("%.2f", ratio)},
			{"`GET " + list + "`", ms(lp), "1"},
		})
	note(fmt.Sprintf("Target: ≤ 2× (%s).", map[bool]string{true: "met", false: "not met"}[ratio <= 2]))
	b.ReportMetric(ratio, "history/list")
}

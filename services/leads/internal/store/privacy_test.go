package store_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// person is a database with a person (ann@example.com) held by two leads,
// one written in capitals and in qualification, with notes, tasks, a
// unique custom value, history and relayed events; and two other leads,
// one with a note and a task of its own and the address in a custom field
// of type email (as Ann's assistant), the other another address there. Two
// more held the address once: one deleted since (with a note), one whose
// email changed since.
type person struct {
	d                *db.DB
	s                *store.Store
	ann, annToo, bob int64
	nobody, past     int64
	moved            int64
	annNotes         []int64
}

func newPerson(t *testing.T) person {
	t.Helper()
	ctx := context.Background()
	d, s := newStore(t)
	props := customfield.Store{DB: d, Stream: leads.Stream}
	for _, in := range []propertyapi.PropertyInput{{Name: "erp_id", Label: "ERP id", Type: customfield.Text, Unique: true},
		{Name: "assistant_of", Label: "Assistant of", Type: customfield.Email}} {
		if _, err := props.Create(ctx, leads.Object, in); err != nil {
			t.Fatal(err)
		}
	}
	create := func(first, email, status string, custom map[string]any) int64 {
		t.Helper()
		l := leads.Lead{FirstName: first, LastName: "Smith", Status: status, CustomFields: custom}
		if email != "" {
			l.Email = &email
		}
		if source := "web"; first != "Nobody" {
			l.Source = &source
		}
		created, err := s.Create(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		return created.ID
	}
	p := person{d: d, s: s,
		ann:    create("Ann", "ann@example.com", leads.StatusNew, map[string]any{"erp_id": "E-1"}),
		annToo: create("Annie", "ANN@Example.COM", leads.StatusContacted, nil),
		bob:    create("Bob", "bob@example.com", leads.StatusNew, map[string]any{"erp_id": "E-2", "assistant_of": "ann@example.com"}),
		nobody: create("Nobody", "", leads.StatusNew, map[string]any{"assistant_of": "annabel@example.com"}),
	}
	if _, err := s.Update(ctx, p.ann, func(l *leads.Lead) error {
		phone := "+1 555 0100"
		l.Phone = &phone
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	note := func(parent int64, content string) int64 {
		t.Helper()
		n, err := activity.AddNote(ctx, d, activity.Lead, parent, content, nil)
		if err != nil {
			t.Fatal(err)
		}
		return n.ID
	}
	p.annNotes = []int64{note(p.ann, "Ann likes tea"), note(p.ann, "Ann moved to Lyon")}
	note(p.bob, "Bob likes coffee")
	p.past = create("Past", "Ann@example.com", leads.StatusNew, nil)
	note(p.past, "Left the company")
	if err := s.Delete(ctx, p.past); err != nil {
		t.Fatal(err)
	}
	p.moved = create("Moved", "ann@example.com", leads.StatusNew, nil)
	if _, err := s.Update(ctx, p.moved, func(l *leads.Lead) error {
		email := "moved@example.net"
		l.Email = &email
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, parent := range []int64{p.ann, p.annToo, p.bob} {
		if _, err := d.Exec(ctx, `INSERT INTO tasks (parent_type, parent_id, title, lead_id) VALUES ('lead', $1, 'Call back', $1)`,
			parent); err != nil {
			t.Fatal(err)
		}
	}
	// Annie's qualification started: its progress holds what it sent.
	if _, err := d.Exec(ctx, `INSERT INTO qualifications (lead_id, state) VALUES ($1, '{"contact_body": {"email": "ANN@Example.COM"}}')`,
		p.annToo); err != nil {
		t.Fatal(err)
	}
	// Every event so far has been relayed; one more for Bob is not yet.
	if _, err := d.Exec(ctx, `UPDATE outbox SET published_at = now()`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Disqualify(ctx, p.bob, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p person) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := p.d.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	return n
}

func (p person) erase(t *testing.T, email string) privacy.Erasure {
	t.Helper()
	var done privacy.Erasure
	err := p.d.InTx(context.Background(), func(tx pgx.Tx) error {
		var err error
		done, err = p.s.ErasePerson(context.Background(), tx, email)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func str(id int64) string { return strconv.FormatInt(id, 10) }

// TestPersonExport: the export finds the person's leads by address
// ignoring case, with their custom fields, notes, tasks and history, and
// nothing of anyone else.
func TestPersonExport(t *testing.T) {
	t.Parallel()
	p := newPerson(t)
	ctx := context.Background()
	got, err := p.s.Person(ctx, "Ann@EXAMPLE.com")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, l := range got.Leads {
		ids = append(ids, l.ID)
	}
	if diff := cmp.Diff([]int64{p.ann, p.annToo}, ids); diff != "" {
		t.Fatalf("leads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"erp_id": "E-1", "assistant_of": nil}, got.Leads[0].CustomFields); diff != "" {
		t.Errorf("custom fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"erp_id": nil, "assistant_of": nil}, got.Leads[1].CustomFields); diff != "" {
		t.Errorf("custom fields of a lead holding none (-want +got):\n%s", diff)
	}
	if got.Leads[0].Phone == nil || *got.Leads[0].Phone != "+1 555 0100" {
		t.Errorf("lead as read: %+v", got.Leads[0])
	}
	type noteOf struct {
		Lead, ID int64
		Content  string
	}
	var notes []noteOf
	for _, n := range got.Notes {
		notes = append(notes, noteOf{n.LeadID, n.ID, n.Content})
	}
	if diff := cmp.Diff([]noteOf{{p.ann, p.annNotes[0], "Ann likes tea"}, {p.ann, p.annNotes[1], "Ann moved to Lyon"}}, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	var taskOf []int64
	for _, task := range got.Tasks {
		taskOf = append(taskOf, *task.LeadID)
	}
	if diff := cmp.Diff([]int64{p.ann, p.annToo}, taskOf); diff != "" {
		t.Errorf("tasks' leads (-want +got):\n%s", diff)
	}
	kinds := map[string]int{}
	for _, e := range got.History {
		kinds[e.Object+"."+e.Action]++
	}
	if diff := cmp.Diff(map[string]int{"lead.created": 3, "lead.updated": 1, "note.created": 3, "task.created": 2,
		"lead.deleted": 1, "note.deleted": 1}, kinds); diff != "" {
		t.Errorf("history entries (-want +got):\n%s", diff)
	}
	// Bob's lead holds the address: which field, not what else it holds.
	if diff := cmp.Diff([]leads.HeldValue{{LeadID: p.bob, Field: "assistant_of"}}, got.CustomFieldValues); diff != "" {
		t.Errorf("custom field values (-want +got):\n%s", diff)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(raw); strings.Contains(s, "bob") || strings.Contains(s, "Bob") || strings.Contains(s, "Nobody") || strings.Contains(s, "annabel") ||
		strings.Contains(s, "Moved") {
		t.Errorf("the export holds someone else's data: %s", s)
	}

	none, err := p.s.Person(ctx, "nobody@example.com")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(none)
	if diff := cmp.Diff(`{"leads":[],"notes":[],"tasks":[],"history":[],"custom_field_values":[]}`, string(raw)); diff != "" {
		t.Errorf("an address held nowhere (-want +got):\n%s", diff)
	}
}

// notThePerson selects the history entries not about leads $1.
const notThePerson = `((object = 'lead' AND record_id = ANY($1))
	OR (parent_object = 'lead' AND parent_id = ANY($1))) IS NOT TRUE`

// TestErasePerson: the erasure deletes the person's leads (any case of
// the address) with their notes, tasks, qualification progress and unique
// values, publishes lead.deleted with the id alone, redacts their history
// and relayed events, clears the address from another lead's custom field
// (and its history and relayed events), keeps the list totals right and
// leaves everything else alone; a second run finds nothing and changes
// nothing.
func TestErasePerson(t *testing.T) {
	t.Parallel()
	p := newPerson(t)
	ctx := context.Background()
	ids := []int64{p.ann, p.annToo}
	relayed := p.count(t, `SELECT count(*) FROM outbox WHERE stream = $1 AND type <> 'lead.deleted'
		AND aggregate_id = ANY($2) AND published_at IS NOT NULL`, leads.Stream, []string{str(p.ann), str(p.annToo)})
	if relayed != 3 { // 2 creates, 1 update
		t.Fatalf("%d relayed events of the person, want 3", relayed)
	}
	otherHistory := p.count(t, `SELECT count(*) FROM history WHERE `+notThePerson, ids)
	// Bob's create, disqualification, note and task, Nobody's create; the
	// past lead's create, note, and their deletes; the moved one's create
	// and update.
	if otherHistory != 11 {
		t.Fatalf("%d history entries of others, want 11", otherHistory)
	}

	// A required field is cleared all the same: the erasure is owed.
	if _, err := p.d.Exec(ctx, `UPDATE custom_field_definitions SET required = true WHERE name = 'assistant_of'`); err != nil {
		t.Fatal(err)
	}
	done := p.erase(t, "ann@example.COM")
	// The history of them: 7 entries and the 6 deletes (2 leads, 2
	// notes, 2 tasks), every one redacted; and Bob's create and the
	// clearing of his field; the past lead's 4; the moved lead's create
	// and update. The events: the person's 3, and the creates of Bob, the
	// past and the moved lead.
	want := privacy.Erasure{IDs: ids, Cleared: []int64{p.bob}, Notes: 2, Tasks: 2, History: 21, Events: 6}
	if diff := cmp.Diff(want, done); diff != "" {
		t.Errorf("erasure (-want +got):\n%s", diff)
	}
	for name, n := range map[string]int64{
		"leads":          p.count(t, `SELECT count(*) FROM leads WHERE id = ANY($1)`, ids),
		"notes":          p.count(t, `SELECT count(*) FROM notes WHERE parent_type = 'lead' AND parent_id = ANY($1)`, ids),
		"tasks":          p.count(t, `SELECT count(*) FROM tasks WHERE parent_type = 'lead' AND parent_id = ANY($1)`, ids),
		"qualifications": p.count(t, `SELECT count(*) FROM qualifications WHERE lead_id = ANY($1)`, ids),
		"unique values":  p.count(t, `SELECT count(*) FROM custom_field_unique WHERE object = 'leads' AND record_id = ANY($1)`, ids),
		"history values": p.count(t, `SELECT count(*) FROM history h,
				LATERAL (SELECT * FROM jsonb_each(coalesce(h.before, '{}')) UNION ALL SELECT * FROM jsonb_each(coalesce(h.after, '{}'))) e
			WHERE ((h.object = 'lead' AND h.record_id = ANY($1)) OR (h.parent_object = 'lead' AND h.parent_id = ANY($1)))
				AND NOT (e.key = 'id' OR e.key LIKE '%\_id' OR e.key IN ('created_at', 'updated_at'))
				AND e.value <> 'null' AND e.value <> '"[erased]"'`, ids),
		"address in history": p.count(t, `SELECT count(*) FROM history WHERE concat(before::text, after::text) ILIKE '%ann@example.com%'`),
		"relayed events":     p.count(t, `SELECT count(*) FROM outbox WHERE published_at IS NOT NULL AND payload::text ILIKE '%ann@example.com%'`),
		"names in events":    p.count(t, `SELECT count(*) FROM outbox WHERE payload::text LIKE '%"Ann%'`),
	} {
		if n != 0 {
			t.Errorf("%s of the person left: %d", name, n)
		}
	}
	rows, err := p.d.Query(ctx, `SELECT payload::text FROM outbox WHERE stream = $1 AND type = 'lead.deleted'
		AND aggregate_id = ANY($2) ORDER BY id`, leads.Stream, []string{str(p.ann), str(p.annToo)})
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`{"id":` + str(p.ann) + `}`, `{"id":` + str(p.annToo) + `}`}, deleted); diff != "" {
		t.Errorf("lead.deleted payloads (-want +got):\n%s", diff)
	}

	// Bob keeps his lead, without the address; everyone else and
	// everything else is untouched.
	bob, err := p.s.Get(ctx, p.bob)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"erp_id": "E-2", "assistant_of": nil}, bob.CustomFields); diff != "" {
		t.Errorf("Bob's custom fields (-want +got):\n%s", diff)
	}
	for name, got := range map[string][2]int64{
		"leads": {3, p.count(t, `SELECT count(*) FROM leads`)},
		"past erased": {4, p.count(t, `SELECT count(*) FROM history WHERE (record_id = $1 OR parent_id = $1)
			AND concat(before::text, after::text) LIKE '%"[erased]"%' AND concat(before::text, after::text) NOT LIKE '%Past%'`, p.past)},
		"moved kept": {2, p.count(t, `SELECT count(*) FROM history WHERE object = 'lead' AND record_id = $1
			AND concat(before::text, after::text) LIKE '%"email": "[erased]"%'
			AND (after::text LIKE '%"first_name": "Moved"%' OR after::text LIKE '%moved@example.net%')`, p.moved)},
		"bob's notes": {1, p.count(t, `SELECT count(*) FROM notes WHERE parent_id = $1`, p.bob)},
		"bob's tasks": {1, p.count(t, `SELECT count(*) FROM tasks WHERE parent_id = $1`, p.bob)},
		"bob's value": {1, p.count(t, `SELECT count(*) FROM custom_field_unique WHERE record_id = $1`, p.bob)},
		// Bob's create and the clearing name the field erased, and
		// nothing else is.
		"other history erased": {2, p.count(t, `SELECT count(*) FROM history WHERE `+notThePerson+`
			AND concat(before::text, after::text) LIKE '%"assistant_of": "[erased]"%'`, ids)},
		"other history": {otherHistory + 1, p.count(t, `SELECT count(*) FROM history WHERE `+notThePerson, ids)},
		"bob's create kept": {1, p.count(t, `SELECT count(*) FROM history WHERE object = 'lead' AND record_id = $1 AND action = 'created'
			AND after::text LIKE '%"first_name": "Bob"%' AND after::text LIKE '%"erp_id": "E-2"%'`, p.bob)},
		"others unredacted": {4, p.count(t, `SELECT count(*) FROM history WHERE `+notThePerson+`
			AND concat(before::text, after::text) NOT LIKE '%"[erased]"%'`, ids)},
		"annabel": {1, p.count(t, `SELECT count(*) FROM history WHERE after::text LIKE '%annabel@example.com%'`)},
		// Bob's relayed create went with the address; his
		// disqualification not yet relayed goes out as it is (the events
		// feed is redacted after); the clearing's carries none.
		"bob's events": {2, p.count(t, `SELECT count(*) FROM outbox WHERE aggregate_id = $1 AND payload::text LIKE '%bob@example.com%'`, str(p.bob))},
		"unrelayed":    {1, p.count(t, `SELECT count(*) FROM outbox WHERE published_at IS NULL AND payload::text LIKE '%ann@example.com%'`)},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: %d, want %d", name, got[1], got[0])
		}
	}
	// The erased unique value is free again.
	if _, ok, err := p.s.Lookup(ctx, customfield.Definition{Name: "erp_id"}, "E-1"); err != nil || ok {
		t.Errorf("E-1 still held (%t, %v)", ok, err)
	}
	// The list totals the counts and the cube answer are the table's.
	for name, f := range map[string]leads.Filter{"none": {}, "new": {Status: leads.StatusNew}, "contacted": {Status: leads.StatusContacted},
		"source": {Source: "web"}} {
		f.Query.Page, f.Query.PerPage, f.Query.SortBy = 1, 5, leads.DefaultSort
		_, total, err := p.s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		w := store.Where(f)
		if want := p.count(t, `SELECT count(*) FROM leads `+w.SQL(), w.Args()...); int64(total) != want {
			t.Errorf("%s: total %d, counting %d", name, total, want)
		}
	}

	// Again: nothing left to find, nothing changes.
	before := p.count(t, `SELECT count(*) FROM outbox`)
	if diff := cmp.Diff(privacy.Erasure{}, p.erase(t, "ann@example.com")); diff != "" {
		t.Errorf("second erasure (-want +got):\n%s", diff)
	}
	if after := p.count(t, `SELECT count(*) FROM outbox`); after != before {
		t.Errorf("the second erasure recorded %d events", after-before)
	}
}

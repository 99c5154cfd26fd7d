package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

// privacyStore is a store on the schema the service migrates (with the
// idempotency keys an erasure's part is stored in).
func privacyStore(t *testing.T) (*store.Store, *db.DB) {
	t.Helper()
	d := testdb.New(t, "webhooks", store.Migrate, store.MigrationSets...)
	st, err := store.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return st, d
}

// TestRedact: privacy_redact turns every value but ids, timestamps and
// nulls into "[erased]", in nested objects and arrays too (ids exact);
// a redacted payload stays as it is.
func TestRedact(t *testing.T) {
	t.Parallel()
	_, d := privacyStore(t)
	for _, tt := range []struct {
		name, in, want string
		changed        bool
	}{
		{"record",
			`{"id":5,"first_name":"Ann","email":"ann@example.com","phone":null,"company_id":7,"score":12.5,"vip":true,` +
				`"created_at":"2026-03-01T10:00:00Z","updated_at":"2026-03-02T10:00:00Z"}`,
			`{"id":5,"first_name":"[erased]","email":"[erased]","phone":null,"company_id":7,"score":"[erased]","vip":"[erased]",` +
				`"created_at":"2026-03-01T10:00:00Z","updated_at":"2026-03-02T10:00:00Z"}`, true},
		{"nested",
			`{"success":true,"contact_id":42,"data":{"id":9,"email":"ann@example.com","custom_fields":{"source":"fair","owner_id":3},` +
				`"tags":["vip",{"tag_id":1,"name":"x"}],"occurred_at":"2026-03-01T10:00:00Z"},"ids":[1,2],"empty":{},"none":[]}`,
			`{"success":"[erased]","contact_id":42,"data":{"id":9,"email":"[erased]","custom_fields":{"source":"[erased]","owner_id":3},` +
				`"tags":["[erased]",{"tag_id":1,"name":"[erased]"}],"occurred_at":"2026-03-01T10:00:00Z"},"ids":["[erased]","[erased]"],"empty":{},"none":[]}`, true},
		{"big id kept exact", `{"id":9007199254740993,"name":"x"}`, `{"id":9007199254740993,"name":"[erased]"}`, true},
		{"a key like an id", `{"paid":"yes","idea":"x"}`, `{"paid":"[erased]","idea":"[erased]"}`, true},
		{"redacted before", `{"id":5,"email":"[erased]","phone":null}`, `{"id":5,"email":"[erased]","phone":null}`, false},
		{"ids only", `{"id":5}`, `{"id":5}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var equal, changed bool
			var got string
			if err := d.QueryRow(context.Background(), `SELECT privacy_redact($1::jsonb) = $2::jsonb,
				privacy_redact($1::jsonb) <> $1::jsonb, privacy_redact($1::jsonb)::text`, tt.in, tt.want).Scan(&equal, &changed, &got); err != nil {
				t.Fatal(err)
			}
			if !equal || changed != tt.changed {
				t.Errorf("privacy_redact = %s (changed %v), want %s (changed %v)", got, changed, tt.want, tt.changed)
			}
		})
	}
}

// privacyFixture is a feed with the person's events (by contact id, by
// lead id, by address in a deal's payload) and others', each delivered to
// one subscription.
type privacyFixture struct {
	st  *store.Store
	d   *db.DB
	sub int64
	// seq of each event by name.
	seq map[string]int64
	at  time.Time
}

var fixtureEvents = []struct {
	name, typ, record, data string
}{
	{"contact", "contact.created", "5", `{"id":5,"first_name":"Ann","email":"ann@example.com","phone":null,` +
		`"custom_fields":{"source":"fair"},"company_id":7,"created_at":"2026-03-01T10:00:00Z"}`},
	{"lead", "lead.updated", "9", `{"id":9,"first_name":"A.","email":"a@elsewhere.example"}`},
	{"deal", "deal.created", "100", `{"id":100,"title":"Retrofit for ANN@example.com.","contact_id":5}`},
	{"deleted", "contact.deleted", "5", `{"id":5}`},
	{"joann", "contact.updated", "6", `{"id":6,"email":"joann@example.com","note":"ann@example.com.au"}`},
	{"lead 5", "lead.created", "5", `{"id":5,"email":"bob@example.com"}`},
}

func newPrivacyFixture(t *testing.T) *privacyFixture {
	t.Helper()
	st, d := privacyStore(t)
	ctx := context.Background()
	w, err := st.Create(ctx, store.NewSubscription{URL: "https://x.example/", Events: []string{"*"}, Active: true,
		Secret: []byte{1}, Fingerprint: "x"}, 25)
	if err != nil {
		t.Fatal(err)
	}
	f := &privacyFixture{st: st, d: d, sub: w.ID, seq: map[string]int64{}, at: time.Now().UTC().Truncate(time.Millisecond)}
	for i, e := range fixtureEvents {
		if _, err := st.Ingest(ctx, store.NewEvent{Source: "contacts", SourceID: int64(i + 1), Type: e.typ, RecordID: e.record,
			Data: json.RawMessage(e.data), OccurredAt: f.at}); err != nil {
			t.Fatal(err)
		}
		var seq int64
		if err := d.QueryRow(ctx, `SELECT seq FROM events WHERE source_id = $1`, i+1).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		f.seq[e.name] = seq
	}
	// What the engine records of attempts: the contact's delivery failed
	// once with the receiver echoing the payload, then went through; the
	// deal's attempt stored no body; the other person's echoed too.
	contact, deal, joann := f.seq["contact"], f.seq["deal"], f.seq["joann"]
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE deliveries SET status = 'delivered', attempt = 2, status_code = 200, response_body = 'ok ann@example.com',
			last_attempt_at = $2 WHERE event_seq = $1`, []any{contact, f.at}},
		{`UPDATE deliveries SET status = 'delivered', attempt = 1, status_code = 200, response_body = 'joann',
			last_attempt_at = $2 WHERE event_seq = $1`, []any{joann, f.at}},
		{`INSERT INTO delivery_attempts (delivery_id, attempt, status_code, duration_ms, response_body, attempted_at)
		SELECT id, 1, 500, 3, '{"echo":{"email":"ann@example.com"}}', $2::timestamptz FROM deliveries WHERE event_seq = $1
		UNION ALL SELECT id, 2, 200, 3, 'ok ann@example.com', $2 FROM deliveries WHERE event_seq = $1
		UNION ALL SELECT id, 1, 204, 2, NULL, $2 FROM deliveries WHERE event_seq = $3
		UNION ALL SELECT id, 1, 200, 2, 'joann', $2 FROM deliveries WHERE event_seq = $4`, []any{contact, f.at, deal, joann}},
	} {
		if _, err := d.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

var ann = privacyapi.Subject{Email: "Ann@Example.com", ContactIDs: []int64{5, 11}, LeadIDs: []int64{9}}

// payloads are the feed's payloads by event name.
func (f *privacyFixture) payloads(t *testing.T) map[string]any {
	t.Helper()
	evs, _, err := f.st.Feed(context.Background(), 0, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]json.RawMessage{}
	for _, e := range evs {
		byID[e.ID] = e.Data
	}
	out := map[string]any{}
	for name, seq := range f.seq {
		var v any
		if err := json.Unmarshal(byID["evt_"+itoa(seq)], &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = v
	}
	return out
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// bodies are the stored response bodies: the deliveries' then the
// attempts', in id and attempt order.
func (f *privacyFixture) bodies(t *testing.T) []*string {
	t.Helper()
	rows, err := f.d.Query(context.Background(), `
		SELECT response_body FROM (SELECT id, 0 AS attempt, response_body FROM deliveries
			UNION ALL SELECT delivery_id, attempt, response_body FROM delivery_attempts) b ORDER BY id, attempt`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[*string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrivacyExport: the person's events are those of their contacts and
// leads and those whose payload quotes their address (whatever its case,
// not inside a longer address); the deliveries are those events'.
func TestPrivacyExport(t *testing.T) {
	t.Parallel()
	f := newPrivacyFixture(t)
	part, err := f.st.Export(context.Background(), ann)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(privacyapi.Found{}, part.Found); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	var ids []int64
	if rows, err := f.d.Query(context.Background(), `SELECT id FROM deliveries ORDER BY event_seq`); err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
	}
	at := `"` + f.at.Format("2006-01-02T15:04:05.000000Z") + `"`
	event := func(name string) string {
		for _, e := range fixtureEvents {
			if e.name == name {
				return `{"id":"evt_` + itoa(f.seq[name]) + `","type":"` + e.typ + `","occurred_at":` + at + `,"payload":` + e.data + `}`
			}
		}
		panic(name)
	}
	want := `{"events":[` + event("contact") + `,` + event("lead") + `,` + event("deal") + `,` + event("deleted") + `],` +
		`"deliveries":[` +
		`{"id":` + itoa(ids[0]) + `,"event_id":"evt_` + itoa(f.seq["contact"]) + `","subscription_id":` + itoa(f.sub) + `,"status":"delivered","attempted_at":` + at + `},` +
		`{"id":` + itoa(ids[1]) + `,"event_id":"evt_` + itoa(f.seq["lead"]) + `","subscription_id":` + itoa(f.sub) + `,"status":"pending","attempted_at":null},` +
		`{"id":` + itoa(ids[2]) + `,"event_id":"evt_` + itoa(f.seq["deal"]) + `","subscription_id":` + itoa(f.sub) + `,"status":"pending","attempted_at":null},` +
		`{"id":` + itoa(ids[3]) + `,"event_id":"evt_` + itoa(f.seq["deleted"]) + `","subscription_id":` + itoa(f.sub) + `,"status":"pending","attempted_at":null}]}`
	if diff := cmp.Diff(decode(t, want), decode(t, string(part.Data))); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}

	part, err = f.st.Export(context.Background(), privacyapi.Subject{Email: "nobody@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decode(t, `{"events":[],"deliveries":[]}`), decode(t, string(part.Data))); diff != "" {
		t.Errorf("export of nobody (-want +got):\n%s", diff)
	}
}

func (f *privacyFixture) erase(t *testing.T, s privacyapi.Subject) privacyapi.ErasePart {
	t.Helper()
	var part privacyapi.ErasePart
	err := f.d.InTx(context.Background(), func(tx pgx.Tx) error {
		var err error
		part, err = f.st.Erase(context.Background(), tx, s)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return part
}

// TestPrivacyErase: the person's events keep only ids and timestamps, as
// the feed then serves them, and their deliveries' stored bodies are
// erased; the others' events and deliveries are untouched; a second
// erasure changes nothing.
func TestPrivacyErase(t *testing.T) {
	t.Parallel()
	f := newPrivacyFixture(t)
	before := f.payloads(t)
	want := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Redacted: map[string]int64{"events": 3, "deliveries": 1}}}
	if diff := cmp.Diff(want, f.erase(t, ann)); diff != "" {
		t.Errorf("erase (-want +got):\n%s", diff)
	}

	wantPayloads := map[string]any{
		"contact": decode(t, `{"id":5,"first_name":"[erased]","email":"[erased]","phone":null,`+
			`"custom_fields":{"source":"[erased]"},"company_id":7,"created_at":"2026-03-01T10:00:00Z"}`),
		"lead":    decode(t, `{"id":9,"first_name":"[erased]","email":"[erased]"}`),
		"deal":    decode(t, `{"id":100,"title":"[erased]","contact_id":5}`),
		"deleted": before["deleted"],
		"joann":   before["joann"],
		"lead 5":  before["lead 5"],
	}
	if diff := cmp.Diff(wantPayloads, f.payloads(t)); diff != "" {
		t.Errorf("feed (-want +got):\n%s", diff)
	}
	erased := privacyapi.Erased
	joann := "joann"
	// The contact's delivery and its two attempts, the lead's, the deal's
	// (one attempt, no body), the deleted contact's, joann's (and its
	// attempt), lead 5's.
	wantBodies := []*string{&erased, &erased, &erased, nil, nil, nil, nil, &joann, &joann, nil}
	if diff := cmp.Diff(wantBodies, f.bodies(t)); diff != "" {
		t.Errorf("response bodies (-want +got):\n%s", diff)
	}

	again := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Redacted: map[string]int64{"events": 0, "deliveries": 0}}}
	if diff := cmp.Diff(again, f.erase(t, ann)); diff != "" {
		t.Errorf("second erase (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPayloads, f.payloads(t)); diff != "" {
		t.Errorf("feed after the second erase (-want +got):\n%s", diff)
	}
}

// TestEventsOnTheirWayAfterAnErasure: an event about an erased contact or
// lead stored after the erasure (it was still in a stream) is stored
// redacted; one about another record, or another kind of record with the
// same id, is stored as sent.
func TestEventsOnTheirWayAfterAnErasure(t *testing.T) {
	t.Parallel()
	f := newPrivacyFixture(t)
	f.erase(t, ann)
	late := []struct{ name, typ, record, data, want string }{
		{"contact", "contact.updated", "5", `{"id":5,"email":"ann@example.com","updated_at":"2026-03-03T10:00:00Z"}`,
			`{"id":5,"email":"[erased]","updated_at":"2026-03-03T10:00:00Z"}`},
		{"second contact", "contact.updated", "11", `{"id":11,"phone":"+1 555"}`, `{"id":11,"phone":"[erased]"}`},
		{"lead", "lead.qualified", "9", `{"success":true,"contact_id":12,"data":{"id":9,"email":"ann@example.com"}}`,
			`{"success":"[erased]","contact_id":12,"data":{"id":9,"email":"[erased]"}}`},
		// A merge into the erased contact follows the same rule as its
		// other events: the payload holds nothing of the person, but only
		// keys named id or *_id stay as sent.
		{"a merge into the contact", "contact.merged", "5", `{"merge_id":3,"survivor_id":5,"merged_ids":[57],"object":"contact"}`,
			`{"merge_id":3,"survivor_id":5,"merged_ids":["[erased]"],"object":"[erased]"}`},
		{"a company merge with the id", "company.merged", "5", `{"merge_id":4,"survivor_id":5,"merged_ids":[8],"object":"company"}`,
			`{"merge_id":4,"survivor_id":5,"merged_ids":[8],"object":"company"}`},
		{"another contact", "contact.updated", "6", `{"id":6,"email":"bob@example.com"}`, `{"id":6,"email":"bob@example.com"}`},
		{"a deal with the id", "deal.updated", "5", `{"id":5,"title":"Retrofit"}`, `{"id":5,"title":"Retrofit"}`},
	}
	// Each alone (a read of one), then all in one read: the redaction
	// runs once per statement, over the rows it inserted.
	var read []store.NewEvent
	for i, e := range late {
		ev := store.NewEvent{Source: "contacts", SourceID: int64(100 + i), Type: e.typ,
			RecordID: e.record, Data: json.RawMessage(e.data), OccurredAt: time.Now()}
		if _, err := f.st.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		ev.SourceID += 100
		read = append(read, ev)
	}
	if n, err := f.st.IngestAll(context.Background(), read); err != nil || n.Events != len(late) {
		t.Fatalf("IngestAll = %+v, %v; want %d events", n, err, len(late))
	}
	for i, e := range late {
		for _, id := range []int{100 + i, 200 + i} {
			var equal bool
			var got string
			if err := f.d.QueryRow(context.Background(), `SELECT data = $2::jsonb, data::text FROM events WHERE source_id = $1`,
				id, e.want).Scan(&equal, &got); err != nil {
				t.Fatal(err)
			}
			if !equal {
				t.Errorf("%s (source id %d): stored %s, want %s", e.name, id, got, e.want)
			}
		}
	}
}

// TestContractEventsOfTheirDeals: a contract's event carries its content,
// which merged the party's name without their address; the events of the
// contracts of the person's deals are redacted all the same, another
// deal's are not.
func TestContractEventsOfTheirDeals(t *testing.T) {
	t.Parallel()
	st, d := privacyStore(t)
	ctx := context.Background()
	for i, data := range []string{
		`{"id":1,"deal_id":100,"title":"Retrofit","content":"<p>Between Acme and Ann Lee</p>"}`,
		`{"id":2,"deal_id":200,"title":"Other","content":"<p>Between Acme and Bob</p>"}`,
	} {
		if _, err := st.Ingest(ctx, store.NewEvent{Source: "contracts", SourceID: int64(i + 1), Type: "contract.created",
			RecordID: itoa(int64(i + 1)), Data: json.RawMessage(data), OccurredAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	var part privacyapi.ErasePart
	if err := d.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		part, err = st.Erase(ctx, tx, privacyapi.Subject{Email: "ann@example.com", ContactIDs: []int64{5}, DealIDs: []int64{100}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := part.Receipt.Redacted["events"]; got != 1 {
		t.Errorf("redacted %d events, want 1", got)
	}
	evs, _, err := st.Feed(ctx, 0, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, e := range evs {
		got = append(got, decode(t, string(e.Data)))
	}
	want := []any{
		decode(t, `{"id":1,"deal_id":100,"title":"[erased]","content":"[erased]"}`),
		decode(t, `{"id":2,"deal_id":200,"title":"Other","content":"<p>Between Acme and Bob</p>"}`),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("feed (-want +got):\n%s", diff)
	}
}

package store

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/pkg/testdb"
)

// seedContract inserts a contract of deal with content (and a signed
// copy when signed) and answers its id.
func seedContract(t *testing.T, d *db.DB, template, deal int64, number, status, content string, signed bool) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := d.QueryRow(ctx, `INSERT INTO contracts (contract_number, title, deal_id, template_id, status, effective_date,
			termination_date, term_months, content)
		VALUES ($1, 'Licence', $2, $3, $4, '2026-01-01', '2028-12-31', 36, $5) RETURNING id`,
		number, deal, template, status, content).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	if signed {
		if _, err := d.Exec(ctx, `INSERT INTO executed_files (contract_id, filename, size, sha256) VALUES ($1, 'signed.pdf', 3, 'x')`, id); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Exec(ctx, `INSERT INTO executed_file_chunks (contract_id, seq, data) VALUES ($1, 0, 'pdf')`, id); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func count(t *testing.T, d *db.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := d.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrivacy: the export lists the contracts of the subject's deals, and
// only theirs, saying which are signed; the erasure deletes the unsigned
// ones with their notes and tasks, redacts their history (the deletions'
// entries included), publishes contract.deleted with the id alone, and
// keeps the signed one with the reason; a repeated erasure answers the
// first receipt and changes nothing; another deal's contract is untouched.
func TestPrivacy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, Schema, Migrate, MigrationSets...)
	p, err := NewPrivacy(d)
	if err != nil {
		t.Fatal(err)
	}
	var template int64
	if err := d.QueryRow(ctx, `INSERT INTO templates (name, content) VALUES ('T', '{{contact.name}}') RETURNING id`).Scan(&template); err != nil {
		t.Fatal(err)
	}
	draft := seedContract(t, d, template, 100, "CTR-1", "draft", "<p>Ann Doe, ann@example.com</p>", false)
	signed := seedContract(t, d, template, 100, "CTR-2", "executed", "<p>Ann Doe signs</p>", true)
	active := seedContract(t, d, template, 101, "CTR-3", "active", "<p>Ann Doe again</p>", false)
	other := seedContract(t, d, template, 200, "CTR-4", "draft", "<p>Carl Roe</p>", false)
	if _, err := d.Exec(ctx, `UPDATE contracts SET content = '<p>Ann Doe, 1 Main St</p>' WHERE id = $1`, draft); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{draft, other} {
		if _, err := d.Exec(ctx, `INSERT INTO notes (parent_type, parent_id, content) VALUES ('contract', $1, 'Call Ann')`, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Exec(ctx, `INSERT INTO tasks (parent_type, parent_id, title) VALUES ('contract', $1, 'Chase Ann')`, active); err != nil {
		t.Fatal(err)
	}
	subject := privacyapi.Subject{Email: "ann@example.com", ContactIDs: []int64{7}, DealIDs: []int64{100, 101}}

	part, err := p.Export(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string][]ContractRef
	if err := json.Unmarshal(part.Data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc["contracts"] {
		if r.CreatedAt.IsZero() {
			t.Errorf("contract %d exported without created_at", r.ID)
		}
	}
	type ref struct {
		ID       int64
		Number   string
		Status   string
		DealID   int64
		Executed bool
	}
	var refs []ref
	for _, r := range doc["contracts"] {
		refs = append(refs, ref{r.ID, r.ContractNumber, string(r.Status), r.DealID, r.Executed})
	}
	if diff := cmp.Diff([]ref{{draft, "CTR-1", "draft", 100, false}, {signed, "CTR-2", "executed", 100, true},
		{active, "CTR-3", "active", 101, false}}, refs); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}
	if part.Found.DealIDs != nil || part.Found.ContactIDs != nil {
		t.Errorf("export found %+v, want nothing for later phases", part.Found)
	}

	otherHistory := count(t, d, `SELECT count(*) FROM history WHERE (object = 'contract' AND record_id = ANY($1))
		OR (parent_object = 'contract' AND parent_id = ANY($1))`, []int64{signed, other})
	want := privacyapi.ErasePart{Receipt: privacyapi.Receipt{
		Context: privacyapi.Contracts, Status: privacyapi.StatusCompleted,
		Erased: map[string]int64{"contracts": 2, "notes": 1, "tasks": 1},
		// draft: created, updated, deleted; active: created, deleted; the
		// note and the task: created, deleted.
		Redacted: map[string]int64{"history": 9},
		Kept:     []privacyapi.Kept{{Object: "contract", ID: signed, Reason: privacyapi.KeptExecutedContract}},
	}}
	for i := range 2 {
		got, err := privacy.Erase(ctx, d, privacyapi.Contracts, 3, subject, p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("erasure %d (-want +got):\n%s", i+1, diff)
		}
	}

	left, err := collectIDs(d.Query(ctx, `SELECT id FROM contracts ORDER BY id`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{signed, other}, left); diff != "" {
		t.Errorf("contracts left (-want +got):\n%s", diff)
	}
	if n := count(t, d, `SELECT count(*) FROM executed_file_chunks WHERE contract_id = $1`, signed); n != 1 {
		t.Errorf("the kept contract's signed copy has %d chunks, want 1", n)
	}
	if n := count(t, d, `SELECT count(*) FROM notes WHERE parent_id = $1`, other); n != 1 {
		t.Errorf("the other contract has %d notes, want 1", n)
	}
	if n := count(t, d, `SELECT count(*) FROM notes`) + count(t, d, `SELECT count(*) FROM tasks`); n != 1 {
		t.Errorf("%d notes and tasks left, want the other contract's note", n)
	}

	// The erased contracts' history keeps ids and timestamps, nothing else.
	rows, err := d.Query(ctx, `SELECT object, action, via, coalesce(before, '{}')::text, coalesce(after, '{}')::text FROM history
		WHERE (object = 'contract' AND record_id = ANY($1)) OR (parent_object = 'contract' AND parent_id = ANY($1))
		ORDER BY id`, []int64{draft, active})
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ Object, Action, Via, Before, After string }
	entries, err := pgx.CollectRows(rows, pgx.RowToStructByPos[entry])
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 9 {
		t.Fatalf("%d history entries of the erased contracts, want 9: %+v", len(entries), entries)
	}
	for _, e := range entries {
		for _, image := range []string{e.Before, e.After} {
			var m map[string]any
			if err := json.Unmarshal([]byte(image), &m); err != nil {
				t.Fatal(err)
			}
			for k, v := range m {
				if k == "id" || k == "created_at" || k == "updated_at" || (len(k) > 3 && k[len(k)-3:] == "_id") || v == nil {
					continue
				}
				if v != privacyapi.Erased {
					t.Errorf("%s %s entry keeps %s = %v", e.Object, e.Action, k, v)
				}
			}
		}
		if e.Action == "deleted" && e.Via != "erasure" {
			t.Errorf("%s deleted via %q, want erasure", e.Object, e.Via)
		}
	}
	if n := count(t, d, `SELECT count(*) FROM history WHERE ((object = 'contract' AND record_id = ANY($1))
		OR (parent_object = 'contract' AND parent_id = ANY($1))) AND (before::text LIKE '%[erased]%' OR after::text LIKE '%[erased]%')`,
		[]int64{signed, other}); n != 0 || count(t, d, `SELECT count(*) FROM history WHERE (object = 'contract' AND record_id = ANY($1))
		OR (parent_object = 'contract' AND parent_id = ANY($1))`, []int64{signed, other}) != otherHistory {
		t.Errorf("the kept and the other contract's history changed (%d entries redacted)", n)
	}

	rows, err = d.Query(ctx, `SELECT aggregate_id, payload::jsonb::text FROM outbox WHERE stream = $1 AND type = 'contract.deleted' ORDER BY id`, Stream)
	if err != nil {
		t.Fatal(err)
	}
	type event struct{ ID, Payload string }
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[event])
	if err != nil {
		t.Fatal(err)
	}
	id := func(n int64) event {
		s := strconv.FormatInt(n, 10)
		return event{s, `{"id": ` + s + `}`}
	}
	if diff := cmp.Diff([]event{id(draft), id(active)}, events); diff != "" {
		t.Errorf("contract.deleted events (-want +got):\n%s", diff)
	}
}

// TestPrivacyNothing: a subject without deals, or whose deals have no
// contract, finds nothing and erases nothing.
func TestPrivacyNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, Schema, Migrate, MigrationSets...)
	p, err := NewPrivacy(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []privacyapi.Subject{{Email: "a@example.com"}, {Email: "a@example.com", DealIDs: []int64{5}}} {
		part, err := p.Export(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if string(part.Data) != `{"contracts":[]}` {
			t.Errorf("export of %+v = %s", s, part.Data)
		}
		err = d.InTx(ctx, func(tx pgx.Tx) error {
			got, err := p.Erase(ctx, tx, s)
			if err != nil {
				return err
			}
			want := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Erased: map[string]int64{"contracts": 0, "notes": 0, "tasks": 0},
				Redacted: map[string]int64{"history": 0}, Kept: []privacyapi.Kept{}}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("erasure of %+v (-want +got):\n%s", s, diff)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

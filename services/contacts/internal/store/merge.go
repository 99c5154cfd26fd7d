package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

var _ contacts.MergeStore = (*Store)(nil)

const mergeCols = `id, object, survivor, merged, fields, status, steps, created_at, completed_at`

func scanMerge(row pgx.CollectableRow) (contacts.Merge, error) {
	var m contacts.Merge
	var completed *time.Time
	err := row.Scan(&m.ID, &m.Object, &m.Survivor, &m.Merged, &m.Fields, &m.Status, &m.Steps, &m.CreatedAt.Time, &completed)
	if completed != nil {
		m.CompletedAt = &timestamp.Time{Time: *completed}
	}
	if m.Fields == nil {
		m.Fields = map[string]int64{}
	}
	return m, err
}

// MergedInto is the record id of object was merged into (following
// later merges of that record).
func (s *Store) MergedInto(ctx context.Context, object string, id int64) (int64, bool, error) {
	var into int64
	err := s.db.QueryRow(ctx, `SELECT "into" FROM merged_records WHERE object = $1 AND id = $2`, object, id).Scan(&into)
	if db.IsNoRows(err) {
		return 0, false, nil
	}
	return into, err == nil, err
}

// FindMerge is the latest merge of object into survivor of exactly merged.
func (s *Store) FindMerge(ctx context.Context, object string, survivor int64, merged []int64) (contacts.Merge, bool, error) {
	return findMerge(ctx, s.db, object, survivor, merged)
}

func findMerge(ctx context.Context, q db.Querier, object string, survivor int64, merged []int64) (contacts.Merge, bool, error) {
	m, err := one(q, ctx, scanMerge, "merge", `SELECT `+mergeCols+` FROM merges
		WHERE object = $1 AND survivor = $2 AND merged = $3 ORDER BY id DESC LIMIT 1`, object, survivor, merged)
	if fault.KindOf(err) == fault.KindNotFound {
		return contacts.Merge{}, false, nil
	}
	return m, err == nil, err
}

// GetMerge reads a merge.
func (s *Store) GetMerge(ctx context.Context, id int64) (contacts.Merge, error) {
	return one(s.db, ctx, scanMerge, "merge", `SELECT `+mergeCols+` FROM merges WHERE id = $1`, id)
}

// lockMerge takes the rows of a merge (survivor and merged, in id order,
// FOR UPDATE) and checks them: the survivor exists (else not found), each
// merged id exists (else a field error naming its place in the request),
// and none is the survivor of a running merge (409 merge_running). ok
// false with no error: the same merge committed meanwhile (found).
func lockMerge[T any](ctx context.Context, tx pgx.Tx, r contacts.MergeRequest, given []int64, table, cols string,
	scan pgx.RowToFunc[T], id func(T) int64) (survivor T, merged []T, found *contacts.Merge, err error) {
	all := append([]int64{r.Survivor}, r.Merged...)
	rows, err := tx.Query(ctx, `SELECT `+cols+` FROM `+table+` WHERE id = ANY($1) ORDER BY id FOR UPDATE`, all)
	if err != nil {
		return survivor, nil, nil, err
	}
	got, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return survivor, nil, nil, err
	}
	have := map[int64]T{}
	for _, g := range got {
		have[id(g)] = g
	}
	sv, ok := have[r.Survivor]
	if !ok {
		return survivor, nil, nil, fault.NotFound(r.Object)
	}
	var missing []fault.Field
	for i, m := range given {
		if g, ok := have[m]; ok {
			merged = append(merged, g)
			continue
		}
		msg := "does not exist"
		var into int64
		if err := tx.QueryRow(ctx, `SELECT "into" FROM merged_records WHERE object = $1 AND id = $2`, r.Object, m).Scan(&into); err == nil {
			msg = "was merged into " + idStr(into)
		} else if !db.IsNoRows(err) {
			return survivor, nil, nil, err
		}
		missing = append(missing, fault.Field{Field: fmt.Sprintf("merge_ids[%d]", i), Message: msg})
	}
	if len(missing) > 0 {
		// A repeat racing the first request finds its records gone.
		if m, ok, err := findMerge(ctx, tx, r.Object, r.Survivor, r.Merged); err != nil || ok {
			return survivor, nil, &m, err
		}
		return survivor, nil, nil, fault.Validation(missing...)
	}
	var running int64
	err = tx.QueryRow(ctx, `SELECT id FROM merges WHERE status = 'running' AND object = $1 AND survivor = ANY($2)
		ORDER BY id LIMIT 1`, r.Object, all).Scan(&running)
	switch {
	case err == nil:
		return survivor, nil, nil, fault.Conflict(contactsapi.CodeMergeRunning,
			"merge "+idStr(running)+" is still moving records to one of these; retry when it completes").With("merge_id", running)
	case !db.IsNoRows(err):
		return survivor, nil, nil, err
	}
	return sv, merged, nil, nil
}

// MergeContacts runs a contact merge's local step in one transaction:
// the survivor takes the combined fields, the merged contacts' notes and
// tasks (and tasks naming them) move to it, the merged contacts are
// deleted (contact.deleted each) and tombstoned, and the merge is stored
// running with a pending step per mover, with contact.merged and the
// audit log's records.merged.
func (s *Store) MergeContacts(ctx context.Context, r contacts.MergeRequest, movers []string,
	combine contacts.Combine[contacts.Contact]) (contacts.Merge, bool, error) {
	var replayed bool
	m, err := inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Merge, error) {
		defs, err := hold(ctx, tx, propertyapi.Contacts)
		if err != nil {
			return contacts.Merge{}, err
		}
		survivor, merged, found, err := lockMerge(ctx, tx, r, r.Given, "contacts", contactCols, scanContact,
			func(c contacts.Contact) int64 { return c.ID })
		if err != nil || found != nil {
			replayed = found != nil
			return deref(found), err
		}
		for _, sql := range []string{
			`UPDATE notes SET parent_id = $1 WHERE parent_type = '` + activity.Contact + `' AND parent_id = ANY($2)`,
			`UPDATE tasks SET parent_id = $1 WHERE parent_type = '` + activity.Contact + `' AND parent_id = ANY($2)`,
			`UPDATE tasks SET contact_id = $1 WHERE contact_id = ANY($2)`,
		} {
			if _, err := tx.Exec(ctx, sql, r.Survivor, r.Merged); err != nil {
				return contacts.Merge{}, err
			}
		}
		for _, id := range r.Merged {
			if err := deleteContact(ctx, tx, id); err != nil {
				return contacts.Merge{}, err
			}
		}
		var combineErr error
		var kept *string
		if _, _, err := updateContact(ctx, tx, defs, r.Survivor, func(c *contacts.Contact) error {
			*c, combineErr = combine(*c, merged, defs)
			kept = c.Email
			return combineErr
		}, false); err != nil {
			return contacts.Merge{}, err
		}
		return recordMerge(ctx, tx, r, movers, contacts.ContactMerged, formerEmails(slices.Concat(merged, []contacts.Contact{survivor}), kept)...)
	})
	return m, replayed, err
}

// MergeCompanies is MergeContacts for companies: the merged companies'
// contacts (contact.updated each) and the tasks naming them move to the
// survivor.
func (s *Store) MergeCompanies(ctx context.Context, r contacts.MergeRequest, movers []string,
	combine contacts.Combine[contacts.Company]) (contacts.Merge, bool, error) {
	var replayed bool
	m, err := inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Merge, error) {
		defs, err := hold(ctx, tx, propertyapi.Companies)
		if err != nil {
			return contacts.Merge{}, err
		}
		_, merged, found, err := lockMerge(ctx, tx, r, r.Given, "companies", companyCols, scanCompany,
			func(c contacts.Company) int64 { return c.ID })
		if err != nil || found != nil {
			replayed = found != nil
			return deref(found), err
		}
		if _, err := tx.Exec(ctx, `WITH u AS (
				UPDATE contacts SET company_id = $1, updated_at = now() WHERE company_id = ANY($2)
				RETURNING id, `+contactJSON+` AS payload)
			INSERT INTO outbox (stream, type, aggregate_id, payload)
			SELECT $3, $4, id::text, payload FROM u ORDER BY id`, r.Survivor, r.Merged, Stream, contacts.ContactUpdated); err != nil {
			return contacts.Merge{}, err
		}
		if _, err := tx.Exec(ctx, `UPDATE tasks SET company_id = $1 WHERE company_id = ANY($2)`, r.Survivor, r.Merged); err != nil {
			return contacts.Merge{}, err
		}
		for _, id := range r.Merged {
			if err := deleteCompany(ctx, tx, id); err != nil {
				return contacts.Merge{}, err
			}
		}
		var combineErr error
		if _, _, err := updateCompany(ctx, tx, r.Survivor, func(c *contacts.Company) error {
			*c, combineErr = combine(*c, merged, defs)
			return combineErr
		}, false); err != nil {
			return contacts.Merge{}, err
		}
		return recordMerge(ctx, tx, r, movers, contacts.CompanyMerged)
	})
	return m, replayed, err
}

// formerEmails are the addresses of records (a contact merge's survivor
// as it was and its merged contacts) that the survivor no longer holds
// (kept is its address after the merge), as mail's participants index
// compares them: trimmed, lower case, distinct, ascending.
func formerEmails(records []contacts.Contact, kept *string) []string {
	norm := func(e *string) string {
		if e == nil {
			return ""
		}
		return strings.ToLower(strings.TrimSpace(*e))
	}
	keep := norm(kept)
	var out []string
	for _, c := range records {
		if a := norm(c.Email); a != "" && a != keep {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func deref(m *contacts.Merge) contacts.Merge {
	if m == nil {
		return contacts.Merge{}
	}
	return *m
}

// recordMerge stores merge r (running with a pending step per mover,
// completed when there is none), tombstones its merged records (and
// re-points the tombstones of records merged into them earlier), and
// records its event and audit entry. emails are the addresses mail's step
// carries (mergeapi.Move.Emails), kept until the merge completes.
func recordMerge(ctx context.Context, tx pgx.Tx, r contacts.MergeRequest, movers []string, event string, emails ...string) (contacts.Merge, error) {
	steps := make([]contacts.MergeStep, len(movers))
	for i, mv := range movers {
		steps[i] = contacts.MergeStep{Context: mv, Status: stepPending}
	}
	status := contactsapi.MergeRunning
	if len(steps) == 0 {
		status = contactsapi.MergeCompleted
	}
	var actor []byte
	if a, ok := history.ActorOf(ctx); ok {
		var err error
		if actor, err = json.Marshal(a); err != nil {
			return contacts.Merge{}, err
		}
	}
	// The request runs the steps itself first: the runner takes the merge
	// only if that attempt never happened (the process stopped) or failed.
	if emails == nil || status == contactsapi.MergeCompleted {
		emails = []string{}
	}
	m, err := one(tx, ctx, scanMerge, "merge", `INSERT INTO merges (object, survivor, merged, fields, status, steps, actor, completed_at, next_at, emails)
		VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $5 = 'completed' THEN now() END, now() + interval '`+firstAttempt+`', $8)
		RETURNING `+mergeCols,
		r.Object, r.Survivor, r.Merged, r.Fields, status, steps, actor, emails)
	if err != nil {
		return m, err
	}
	if _, err := tx.Exec(ctx, `UPDATE merged_records SET "into" = $2 WHERE object = $1 AND "into" = ANY($3)`,
		r.Object, r.Survivor, r.Merged); err != nil {
		return m, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO merged_records (object, id, "into", merge_id)
		SELECT $1, unnest($3::bigint[]), $2, $4`, r.Object, r.Survivor, r.Merged, m.ID); err != nil {
		return m, err
	}
	data := contactsapi.MergedEvent{MergeID: m.ID, Survivor: r.Survivor, Merged: r.Merged}
	if err := outbox.Add(ctx, tx, Stream, event, idStr(r.Survivor), data); err != nil {
		return m, err
	}
	return m, audit.Record(ctx, tx, contactsapi.Service, audit.Entry{Action: identityapi.AuditRecordsMerged,
		Object: r.Object, ID: idStr(r.Survivor), Details: map[string]any{"object": r.Object, "merge_id": m.ID,
			"survivor": r.Survivor, "merged": r.Merged, "fields": r.Fields}})
}

// firstAttempt is how long the runner leaves a new merge to the request
// that made it.
const firstAttempt = "5 seconds"

// Step states.
const (
	stepPending = "pending"
	stepDone    = "done"
)

// Advance runs the pending steps of merge id (0: the running merge due
// first), holding its row lock so no other request or replica runs them
// at once; a merge another holds is skipped (ok false). Each step's
// outcome is stored; a failed one leaves the merge running, due again
// after retry(attempts). The movers act for the merge's requester, via
// merge. step gets the merge's stored e-mail addresses (mergeapi.Move's
// Emails), which completing the merge clears.
func (s *Store) Advance(ctx context.Context, id int64, step func(ctx context.Context, m contacts.Merge, emails []string, mover string) (mergeapi.Moved, error),
	retry func(attempts int) time.Duration) (contacts.Merge, bool, error) {
	var ok bool
	m, err := inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Merge, error) {
		sql := `SELECT ` + mergeCols + `, attempts, actor, emails FROM merges WHERE id = $1 AND status = 'running' FOR UPDATE SKIP LOCKED`
		args := []any{id}
		if id == 0 {
			sql = `SELECT ` + mergeCols + `, attempts, actor, emails FROM merges WHERE status = 'running' AND next_at <= now()
				ORDER BY next_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`
			args = nil
		}
		var attempts int
		var actor []byte
		var emails []string
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return contacts.Merge{}, err
		}
		ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (contacts.Merge, error) {
			var m contacts.Merge
			var completed *time.Time
			err := row.Scan(&m.ID, &m.Object, &m.Survivor, &m.Merged, &m.Fields, &m.Status, &m.Steps, &m.CreatedAt.Time,
				&completed, &attempts, &actor, &emails)
			return m, err
		})
		if err != nil || len(ms) == 0 {
			return contacts.Merge{}, err
		}
		m := ms[0]
		ok = true
		sctx := history.WithVia(ctx, historyapi.ViaMerge)
		if _, known := history.ActorOf(ctx); !known && actor != nil {
			var a historyapi.HistoryActor
			if json.Unmarshal(actor, &a) == nil {
				sctx = history.WithActor(sctx, a)
			}
		}
		failed := false
		for i := range m.Steps {
			st := &m.Steps[i]
			if st.Status != stepPending {
				continue
			}
			st.Attempts++
			moved, err := step(sctx, m, emails, st.Context)
			if err != nil {
				st.Error, failed = err.Error(), true
				continue
			}
			st.Status, st.Moved, st.Error = stepDone, moved, ""
		}
		next := time.Duration(0)
		if failed {
			attempts++
			next = retry(attempts)
			m.Status = contactsapi.MergeRunning
		} else {
			m.Status = contactsapi.MergeCompleted
		}
		return one(tx, ctx, scanMerge, "merge", `UPDATE merges SET steps = $2, status = $3, attempts = $4,
			next_at = now() + $5 * interval '1 microsecond', updated_at = now(),
			completed_at = CASE WHEN $3 = 'completed' THEN now() END,
			emails = CASE WHEN $3 = 'completed' THEN '{}' ELSE emails END
			WHERE id = $1 RETURNING `+mergeCols, m.ID, m.Steps, m.Status, attempts, next.Microseconds())
	})
	return m, ok, err
}

// Dismiss hides the pair a, b of object (ids[0] and ids[1] of the
// request); both must exist.
func (s *Store) Dismiss(ctx context.Context, object string, a, b int64) error {
	table := "contacts"
	if object == contacts.ObjectCompany {
		table = "companies"
	}
	rows, err := s.db.Query(ctx, `SELECT id FROM `+table+` WHERE id = ANY($1)`, []int64{a, b})
	if err != nil {
		return err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	var missing []fault.Field
	for i, id := range []int64{a, b} {
		if !slices.Contains(found, id) {
			missing = append(missing, fault.Field{Field: "ids[" + strconv.Itoa(i) + "]", Message: "does not exist"})
		}
	}
	if len(missing) > 0 {
		return fault.Validation(missing...)
	}
	_, err = s.db.Exec(ctx, `INSERT INTO duplicate_dismissals (object, a, b, created_by)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, object, min(a, b), max(a, b), callerID(ctx))
	return err
}

// callerID is the acting user's id, nil for none.
func callerID(ctx context.Context) *int64 {
	if a, ok := history.ActorOf(ctx); ok {
		return a.ID
	}
	return nil
}

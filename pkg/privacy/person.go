package privacy

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/fault"
)

// Person is the Part of a context whose records find the person by their
// address (contacts, leads): the export is the context's document P of
// the person, the erasure deletes the records (Records.Erase), and both
// hand the records' ids to the later phases. P is encoded as the part's
// data.
type Person[P any] struct {
	// Object names the records in the receipt ("contacts").
	Object string
	// Read reads what the context holds about the person with email, and
	// the ids of the person's records.
	Read func(ctx context.Context, email string) (P, []int64, error)
	// Delete erases it inside tx.
	Delete func(ctx context.Context, tx pgx.Tx, email string) (Erasure, error)
	// Found names the records' ids for the later phases.
	Found func(ids []int64) privacyapi.Found
}

// Export answers what the context holds about the subject, and the
// person's record ids for the later phases.
func (p Person[P]) Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error) {
	email, err := address(s)
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	person, ids, err := p.Read(ctx, email)
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	data, err := json.Marshal(person)
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	return privacyapi.ExportPart{Found: p.Found(ids), Data: data}, nil
}

// Erase deletes the subject's records with their notes and tasks, clears
// the address from other records and redacts the history inside tx, and
// answers the receipt: erased records, notes and tasks; redacted (other)
// records, history entries and events.
func (p Person[P]) Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error) {
	email, err := address(s)
	if err != nil {
		return privacyapi.ErasePart{}, err
	}
	done, err := p.Delete(ctx, tx, email)
	if err != nil {
		return privacyapi.ErasePart{}, err
	}
	return privacyapi.ErasePart{
		Found: p.Found(done.IDs),
		Receipt: privacyapi.Receipt{
			Erased:   map[string]int64{p.Object: int64(len(done.IDs)), "notes": done.Notes, "tasks": done.Tasks},
			Redacted: map[string]int64{p.Object: int64(len(done.Cleared)), "history": done.History, "events": done.Events},
		},
	}, nil
}

// address is the subject's address, refused when empty (the edge has
// refused it already).
func address(s privacyapi.Subject) (string, error) {
	email := strings.TrimSpace(s.Email)
	if email == "" {
		return "", fault.Invalid("email", "is required")
	}
	return email, nil
}

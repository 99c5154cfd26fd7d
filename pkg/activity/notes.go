package activity

import (
	"context"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/validate"
)

// Note is a free-text note on a record; created_by is null for notes the
// system writes (e.g. a contract renewal).
type Note = contactsapi.Note

const noteColumns = `id, content, created_by, created_at, updated_at`

func scanNote(row pgx.CollectableRow) (Note, error) {
	var n Note
	err := row.Scan(&n.ID, &n.Content, &n.CreatedBy, &n.CreatedAt, &n.UpdatedAt)
	return n, err
}
func (h *Handlers) listNotes(w http.ResponseWriter, r *http.Request, pid int64) error {
	rows, err := h.cfg.DB.Query(r.Context(), `SELECT `+noteColumns+` FROM notes
		WHERE parent_type = $1 AND parent_id = $2 ORDER BY created_at DESC, id DESC`, h.cfg.ParentType, pid)
	if err != nil {
		return err
	}
	notes, err := pgx.CollectRows(rows, scanNote)
	if err != nil {
		return err
	}
	if notes == nil {
		notes = []Note{}
	}
	httpx.OK(w, notes)
	return nil
}
func (h *Handlers) createNote(w http.ResponseWriter, r *http.Request, pid int64) error {
	var in contactsapi.NoteInput
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	var v validate.Errors
	content := strings.TrimSpace(in.Content)
	if v.Required("content", content) {
		v.MaxLen("content", content, validate.MaxContent)
	}
	if err := v.Err(); err != nil {
		return err
	}
	n, err := AddNote(r.Context(), h.cfg.DB, h.cfg.ParentType, pid, content, callerID(r))
	if err != nil {
		return err
	}
	w.Header().Set("Location", h.routes.DeleteNote.Location(pid, n.ID))
	httpx.Created(w, n, h.routes.AddNote.Message)
	return nil
}

// AddNote stores a note; created_by nil marks a system note. It takes a
// Querier so a context can add a note inside its own transaction.
func AddNote(ctx context.Context, q db.Querier, parentType string, parentID int64, content string, createdBy *int64) (Note, error) {
	rows, err := q.Query(ctx, `INSERT INTO notes (parent_type, parent_id, content, created_by)
		VALUES ($1, $2, $3, $4) RETURNING `+noteColumns, parentType, parentID, content, createdBy)
	if err != nil {
		return Note{}, err
	}
	return pgx.CollectExactlyOneRow(rows, scanNote)
}
func (h *Handlers) deleteNote(w http.ResponseWriter, r *http.Request, pid int64) error {
	nid, err := httpx.PathID(r, "noteId")
	if err != nil {
		return fault.NotFound("note")
	}
	var author *int64
	err = h.cfg.DB.QueryRow(r.Context(), `SELECT created_by FROM notes WHERE id = $1 AND parent_type = $2 AND parent_id = $3`,
		nid, h.cfg.ParentType, pid).Scan(&author)
	if db.IsNoRows(err) {
		return fault.NotFound("note")
	}
	if err != nil {
		return err
	}
	if me := callerID(r); me == nil || author == nil || *author != *me {
		if err := h.parentWritable(r.Context(), pid); err != nil {
			return err
		}
	}
	tag, err := h.cfg.DB.Exec(r.Context(), `DELETE FROM notes WHERE id = $1 AND parent_type = $2 AND parent_id = $3`,
		nid, h.cfg.ParentType, pid)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.NotFound("note")
	}
	httpx.Deleted(w, h.routes.DeleteNote.Message)
	return nil
}

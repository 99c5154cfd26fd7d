// Package mergehttp serves a mover's part of a merge (pkg/contract/mergeapi):
// POST /internal/merges/{id}. The context supplies the move itself (Move);
// this package decodes and checks the body, records the move's changes
// in history as via merge (whatever the calling request carried: the
// route exists for merges only), and answers {"data": Moved}.
package mergehttp

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/validate"
)

// Move points everything of the context that pointed at one of m.Merged
// (contacts or companies, by m.Object) at m.Into, and counts the records
// it repointed by kind. It must be idempotent: a repeat finds nothing
// left and answers zero.
type Move func(ctx context.Context, m mergeapi.Move) (mergeapi.Moved, error)

// Mount serves mergeapi.RouteMove on mux behind internal (the internal
// secret guard, history.Internal-wrapped so the caller's actor is kept).
func Mount(mux *http.ServeMux, internal func(http.Handler) http.Handler, move Move) {
	mux.Handle(mergeapi.RouteMove, internal(Handler(move)))
}

// Handler answers one move: 422 naming the field for a bad body, else
// 200 {"data": Moved} (an empty object when nothing of that object kind
// lives in the context).
func Handler(move Move) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := httpx.PathID(r, "id"); err != nil {
			return err
		}
		var m mergeapi.Move
		if err := httpx.Decode(w, r, &m, 0); err != nil {
			return err
		}
		if err := Check(m); err != nil {
			return err
		}
		moved, err := move(history.WithVia(r.Context(), historyapi.ViaMerge), m)
		if err != nil {
			return err
		}
		if moved == nil {
			moved = mergeapi.Moved{}
		}
		httpx.JSON(w, http.StatusOK, answer{Data: moved})
		return nil
	}
}

type answer struct {
	Data mergeapi.Moved `json:"data"`
}

// Check refuses a move no merge asks for: an object other than contact or
// company, no survivor, no merged records or more than mergeapi.MaxMerged,
// and a merged id that is not positive or is the survivor itself. Every
// failing field is named at once.
func Check(m mergeapi.Move) error {
	var v validate.Errors
	if m.Object == "" {
		v.Add("object", "is required")
	} else {
		v.OneOf("object", m.Object, mergeapi.Contact, mergeapi.Company)
	}
	v.Positive("into", m.Into)
	switch {
	case len(m.Merged) == 0:
		v.Add("merged", "is required")
	case len(m.Merged) > mergeapi.MaxMerged:
		v.Add("merged", "must hold at most %d ids", mergeapi.MaxMerged)
	default:
		for i, id := range m.Merged {
			field := fmt.Sprintf("merged[%d]", i)
			switch {
			case id <= 0:
				v.Add(field, "must be a positive integer")
			case id == m.Into:
				v.Add(field, "must not be the survivor (into)")
			case slices.Contains(m.Merged[:i], id):
				v.Add(field, "is listed twice")
			}
		}
	}
	return v.Err()
}

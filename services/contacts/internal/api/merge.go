package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// mergedOwner is owner, whose not-found of a merged id is the 404
// merged naming the record it went into (the write guards of PUT and
// DELETE ask the owner first).
func mergedOwner(m *contacts.Merger, object string, owner func(context.Context, int64) (directory.Owner, error)) func(context.Context, int64) (directory.Owner, error) {
	if m == nil {
		return owner
	}
	return func(ctx context.Context, id int64) (directory.Owner, error) {
		o, err := owner(ctx, id)
		return o, m.Merged(ctx, object, id, err)
	}
}

// mergedErr is err, whose not-found of a merged id is the 404 merged
// (a merged record's history, notes and tasks).
func mergedErr(ctx context.Context, m *contacts.Merger, object string, id int64, err error) error {
	if m == nil {
		return err
	}
	return m.Merged(ctx, object, id, err)
}

// mergedAware is h, whose not-found of a merged {id} is the 404 merged.
func mergedAware(m *contacts.Merger, object string, h httpx.HandlerFunc) httpx.HandlerFunc {
	if m == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		err := h(w, r)
		if err == nil {
			return nil
		}
		id, perr := httpx.PathID(r, "id")
		if perr != nil || r.URL.Query().Has("id_property") {
			return err
		}
		return m.Merged(r.Context(), object, id, err)
	}
}

// mountMerges mounts the duplicate and merge routes (nothing without a
// merger). write and companyWrite are the edit-scope guards of the
// survivor.
func mountMerges(mux *http.ServeMux, guards httpx.Guards, m *contacts.Merger, contactWrite, companyWrite func(http.Handler) http.Handler) {
	if m == nil {
		return
	}
	e := mergeEdge{m: m}
	// GET /contacts/duplicates?per_page=&after=a,b: candidate pairs by
	// ascending ids. 200 {"success","data":[pair],"per_page","next"}; 422
	// for a bad per_page or after.
	guards.Mount(mux, contactsapi.ListContactDuplicates, httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		return listPairs(w, r, m.ListContactDuplicates)
	}))
	guards.Mount(mux, contactsapi.ListCompanyDuplicates, httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		return listPairs(w, r, m.ListCompanyDuplicates)
	}))
	// GET /contacts/{id}/duplicates: the contact's candidates, best first
	// (≤ 50). 200 {"success","data":[pair]}; 404 (merged: merged_into).
	guards.Mount(mux, contactsapi.ContactDuplicates, candidates("contact", m.ContactDuplicates))
	guards.Mount(mux, contactsapi.CompanyDuplicates, candidates("company", m.CompanyDuplicates))
	// POST .../duplicates/dismiss {"ids":[a,b]}: 200 {"success","data":
	// {"ids":[low,high]},"message"}; 422 naming ids or ids[i].
	guards.Mount(mux, contactsapi.DismissContactDuplicate, e.dismiss(contacts.ObjectContact, contactsapi.DismissContactDuplicate))
	guards.Mount(mux, contactsapi.DismissCompanyDuplicate, e.dismiss(contacts.ObjectCompany, contactsapi.DismissCompanyDuplicate))
	// POST /contacts/{id}/merge {"merge_ids","fields"}: 200 {"success",
	// "data":merge,"message"} (running while a context's move is
	// pending; a repeat answers the same merge); 404 (merged:
	// merged_into); 409 merge_running, merge_conflict; 422 naming
	// merge_ids, merge_ids[i] or fields.<name>.
	guards.Mount(mux, contactsapi.MergeContacts,
		contactWrite(e.merge("contact", m.MergeContacts, contactsapi.MergeContacts)))
	guards.Mount(mux, contactsapi.MergeCompanies,
		companyWrite(e.merge("company", m.MergeCompanies, contactsapi.MergeCompanies)))
	// GET /merges/{id}: 200 {"success","data":merge}; 404.
	guards.Mount(mux, contactsapi.GetMerge, read("merge", m.GetMerge, httpx.OK))
}

type mergeEdge struct{ m *contacts.Merger }

// listPairs answers one page of candidate pairs.
func listPairs[T any](w http.ResponseWriter, r *http.Request,
	list func(context.Context, [2]int64, int) ([]contactsapi.DuplicatePair[T], *string, error)) error {
	q := r.URL.Query()
	p := listparam.Parse(q, listparam.Options{})
	var fields []fault.Field
	var f *fault.Error
	if err := p.Err(); errors.As(err, &f) {
		fields = append(fields, f.Fields...)
	} else if err != nil {
		return err
	}
	after, err := contacts.ParseAfter(q.Get("after"))
	if errors.As(err, &f) {
		fields = append(fields, f.Fields...)
	}
	if len(fields) > 0 {
		return fault.Validation(fields...)
	}
	n := p.Query().PerPage
	pairs, next, err := list(r.Context(), after, n)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, contactsapi.DuplicatePage[T]{Success: true, Data: pairs, PerPage: n, Next: next})
	return nil
}

// candidates answers one record's candidates.
func candidates[T any](resource string, get func(context.Context, int64) ([]contactsapi.DuplicatePair[T], error)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, resource)
		if err != nil {
			return err
		}
		list, err := get(r.Context(), id)
		if err != nil {
			return err
		}
		httpx.JSON(w, http.StatusOK, envelope.List[contactsapi.DuplicatePair[T]]{Success: true, Data: list})
		return nil
	}
}

func (e mergeEdge) dismiss(object string, decl route.Route) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var in contactsapi.DismissInput
		if err := httpx.Decode(w, r, &in, 0); err != nil {
			return err
		}
		pair, err := e.m.Dismiss(r.Context(), object, in.IDs)
		if err != nil {
			return err
		}
		httpx.Updated(w, contactsapi.Dismissed{IDs: pair}, decl.Message)
		return nil
	}
}

func (e mergeEdge) merge(resource string, fn func(context.Context, int64, contactsapi.MergeInput) (contacts.Merge, bool, error),
	decl route.Route) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, resource)
		if err != nil {
			return err
		}
		var in contactsapi.MergeInput
		if err := httpx.Decode(w, r, &in, 0); err != nil {
			return err
		}
		mg, replayed, err := fn(r.Context(), id, in)
		if err != nil {
			return err
		}
		w.Header().Set("Location", contactsapi.GetMerge.Location(mg.ID))
		if replayed {
			w.Header().Set("Idempotent-Replayed", strconv.FormatBool(true))
		}
		httpx.Updated(w, mg, decl.Message)
		return nil
	}
}

package history

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/validate"
)

// DefaultPerPage is a history page's size without per_page.
const DefaultPerPage = 25

// ParseQuery reads before and per_page; out of range is a 422 naming the
// parameter (a history page is not capped silently as a list's is: its
// cursor walks the whole history anyway).
func ParseQuery(v url.Values) (Query, error) {
	var errs validate.Errors
	q := parse(v, &errs)
	return q, errs.Err()
}

// parse reads before and per_page, adding what is wrong to errs.
func parse(v url.Values, errs *validate.Errors) Query {
	q := Query{PerPage: DefaultPerPage}
	if s := v.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			errs.Add("before", "must be an entry id (the next_before of a page)")
		} else {
			q.Before = &n
		}
	}
	if s := v.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > historyapi.MaxPerPage {
			errs.Add("per_page", "must be an integer between 1 and %d", historyapi.MaxPerPage)
		} else {
			q.PerPage = n
		}
	}
	return q
}

// Handler answers a record's history route (historyapi.NewRoute) from d.
// readable answers nil when the caller may read object id, or the error
// the record's own GET would give (not found, forbidden): the history is
// as visible as the record.
func Handler(d db.Querier, object string, readable func(ctx context.Context, id int64) error) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := httpx.PathID(r, "id")
		if err != nil {
			return err
		}
		q, err := ParseQuery(r.URL.Query())
		if err != nil {
			return err
		}
		if err := readable(r.Context(), id); err != nil {
			return err
		}
		return answer(w, r, d, object, id, q)
	}
}

// AdminHandler answers historyapi.Admin (admins only, by its guard) for
// the objects d's context owns: any record's history, a deleted one's
// too; 404 for a record that never had any.
func AdminHandler(d db.Querier, objects ...string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		v := r.URL.Query()
		var errs validate.Errors
		object := v.Get("object")
		if !slices.Contains(objects, object) {
			errs.Add("object", "must be one of: %s", strings.Join(objects, ", "))
		}
		id, err := strconv.ParseInt(v.Get("id"), 10, 64)
		if err != nil || id < 1 {
			errs.Add("id", "must be a record id (a positive integer)")
		}
		q := parse(v, &errs)
		if err := errs.Err(); err != nil {
			return err
		}
		ok, err := Recorded(r.Context(), d, object, id)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound(object)
		}
		return answer(w, r, d, object, id, q)
	}
}

// answer writes a page of object id's history.
func answer(w http.ResponseWriter, r *http.Request, d db.Querier, object string, id int64, q Query) error {
	entries, more, err := List(r.Context(), d, object, id, q)
	if err != nil {
		return err
	}
	page := historyapi.HistoryPage{Success: true, Data: entries, HasMore: more}
	if n := len(entries); n > 0 {
		page.NextBefore = &entries[n-1].ID
	}
	httpx.JSON(w, http.StatusOK, page)
	return nil
}

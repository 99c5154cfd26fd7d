package history

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/validate"
)

// DefaultPerPage is a history page's size without per_page.
const DefaultPerPage = 25

// ParseQuery reads before and per_page; out of range is a 422 naming the
// parameter (a history page is not capped silently as a list's is: its
// cursor walks the whole history anyway).
func ParseQuery(v url.Values) (Query, error) {
	q := Query{PerPage: DefaultPerPage}
	var errs validate.Errors
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
	return q, errs.Err()
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
}

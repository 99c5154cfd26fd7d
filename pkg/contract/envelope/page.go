package envelope

import "github.com/opencrm/crm/pkg/list"

// NewPage wraps one page of items for q; data is never null and last_page ≥ 1.
func NewPage[T any](items []T, q list.Query, total int) Page[T] {
	if items == nil {
		items = []T{}
	}
	return Page[T]{Data: items, CurrentPage: q.Page, LastPage: q.LastPage(total), PerPage: q.PerPage, Total: total}
}

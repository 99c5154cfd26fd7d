// Package csvio serves lead CSV: the import template, the streamed export
// and the bulk import (DESIGN 8).
package csvio

import (
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// CSV implements api.CSV.
type CSV struct {
	db  *db.DB
	svc *leads.Service
}

// New wires the CSV handlers.
func New(d *db.DB, svc *leads.Service) (*CSV, error) {
	if d == nil || svc == nil {
		return nil, errors.New("csvio: db and service are required")
	}
	return &CSV{db: d, svc: svc}, nil
}

// Template answers the header line.
func (c *CSV) Template(w http.ResponseWriter, r *http.Request) {
	problem.Write(w, r, problem.Unavailable("not implemented", 0))
}

// Export streams every lead matching the list filters.
func (c *CSV) Export(w http.ResponseWriter, r *http.Request) {
	problem.Write(w, r, problem.Unavailable("not implemented", 0))
}

// Import bulk-loads leads.
func (c *CSV) Import(w http.ResponseWriter, r *http.Request) {
	problem.Write(w, r, problem.Unavailable("not implemented", 0))
}

package leadsapitest

import (
	"net/http"
	"strings"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
)

// AddContactEmail makes the duplicate lookup find contact id for email
// (the contact contacts would match), before any lead.
func (f *Fake) AddContactEmail(email string, id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.contacts == nil {
		f.contacts = map[string]int64{}
	}
	f.contacts[strings.ToLower(email)] = id
}

// DuplicatesDown makes the duplicate lookup fail (503) while down is true.
func (f *Fake) DuplicatesDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.duplicatesDown = down
}

// duplicates is leadsapi.RouteDuplicates: the contact with the address,
// else the oldest lead with it (the leads AddLead stored and the batch
// created), compared ignoring case.
func (f *Fake) duplicates(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.URL.Query().Get("email"))
	var v validate.Errors
	if v.Required("email", email) {
		v.MaxLen("email", email, validate.MaxString)
	}
	if err := v.Err(); err != nil {
		problem.Write(w, r, err)
		return
	}
	f.mu.Lock()
	down := f.duplicatesDown
	var found *leadsapi.DuplicateOf
	if id, ok := f.contacts[strings.ToLower(email)]; ok {
		found = &leadsapi.DuplicateOf{ContactID: id}
	} else {
		for id, rec := range f.leads {
			e, _ := rec["email"].(string)
			if strings.EqualFold(e, email) && (found == nil || id < found.LeadID) {
				found = &leadsapi.DuplicateOf{LeadID: id}
			}
		}
	}
	f.mu.Unlock()
	if down {
		problem.Write(w, r, problem.Unavailable("leads is unavailable", 1))
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"data": found})
}

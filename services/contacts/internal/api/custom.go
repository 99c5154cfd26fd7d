package api

import (
	"context"
	"net/http"
	"reflect"
	"strings"

	"github.com/opencrm/crm/pkg/bulk/bulkhttp"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/customfield/propertyhttp"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// The objects of this context that carry custom fields.
var (
	contactObject = customfield.Object{Name: propertyapi.Contacts, Table: "contacts", Builtins: jsonNames(contactsapi.Contact{})}
	companyObject = customfield.Object{Name: propertyapi.Companies, Table: "companies", Builtins: jsonNames(contactsapi.Company{})}
)

// jsonNames are the JSON member names of a record type: the names a
// custom field may not take.
func jsonNames(v any) []string {
	t := reflect.TypeOf(v)
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// mountProperties serves the definition routes of contacts and companies
// and their internal read (the gateway's typed document).
func mountProperties(mux *http.ServeMux, guards httpx.Guards, d *db.DB, internal func(http.Handler) http.Handler) {
	props := customfield.Store{DB: d, Stream: outbox.Stream(contactsapi.Service)}
	propertyhttp.Mount(mux, guards, contactsapi.ContactProperties, props, contactObject)
	propertyhttp.Mount(mux, guards, contactsapi.CompanyProperties, props, companyObject)
	propertyhttp.MountInternal(mux, internal, props, contactObject, companyObject)
}

// updates adapts an update of inputs split from their ids (contacts.Update)
// to the batch's inputs U, which carry the id in the input.
func updates[R, In, U any](update func(ctx context.Context, key string, ups []contacts.Update[In]) (bulkhttp.Done[R], error), split func(U) contacts.Update[In]) func(context.Context, string, []U) (bulkhttp.Done[R], error) {
	return func(ctx context.Context, key string, ins []U) (bulkhttp.Done[R], error) {
		ups := make([]contacts.Update[In], len(ins))
		for i, u := range ins {
			ups[i] = split(u)
		}
		return update(ctx, key, ups)
	}
}

package mail

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
	"github.com/opencrm/crm/pkg/problem"
)

const internalSecret = "test-internal-secret-0123456789"

// answering serves every request with status and a problem body, as a
// provider refusing or failing does.
func answering(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", problem.ContentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"code":"validation_failed","detail":"the provider's own words"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// lookup is what reading a record's email gives mail's edge: the email,
// or the status, code and detail its error is answered with.
type lookup struct {
	Email  string
	Status int
	Code   string
	Detail string
}

// TestRecordEmail: the email of a contact or lead is read from its owner
// through the owner's client (here against the owner's fake), and the
// owner's answers become mail's.
func TestRecordEmail(t *testing.T) {
	t.Parallel()
	contacts := contactsapitest.NewFake(internalSecret)
	_, contactsClient := contacts.Start(t)
	contacts.PutContact(1, map[string]any{"first_name": "Ada", "email": "ada@example.com"})
	contacts.PutContact(2, map[string]any{"first_name": "No", "email": nil})
	leads := leadsapitest.NewFake(internalSecret)
	leadsClient := leadsapi.New(leads.Start(t).URL, internalSecret)
	leads.AddLead(7, map[string]any{"first_name": "Grace", "email": "grace@example.com"})

	tests := []struct {
		name     string
		contacts Contacts
		record   RecordRef
		want     lookup
	}{
		{name: "contact's email", record: RecordRef{KindContact, 1}, want: lookup{Email: "ada@example.com"}},
		{name: "contact without email", record: RecordRef{KindContact, 2}, want: lookup{}},
		{name: "unknown contact is this API's not_found", record: RecordRef{KindContact, 3},
			want: lookup{Status: 404, Code: "not_found", Detail: "contact not found"}},
		{name: "lead's email", record: RecordRef{KindLead, 7}, want: lookup{Email: "grace@example.com"}},
		{name: "unknown lead is this API's not_found", record: RecordRef{KindLead, 8},
			want: lookup{Status: 404, Code: "not_found", Detail: "lead not found"}},
		{name: "another refusal means mail asked wrongly", record: RecordRef{KindContact, 1},
			contacts: contactsapi.New(answering(t, http.StatusUnprocessableEntity), internalSecret),
			want:     lookup{Status: 502, Code: "upstream_unavailable", Detail: "contact lookup failed"}},
		{name: "a conflict is a refusal too", record: RecordRef{KindContact, 1},
			contacts: contactsapi.New(answering(t, http.StatusConflict), internalSecret),
			want:     lookup{Status: 502, Code: "upstream_unavailable", Detail: "contact lookup failed"}},
		{name: "a provider that is down passes on", record: RecordRef{KindContact, 1},
			contacts: contactsapi.New(answering(t, http.StatusServiceUnavailable), internalSecret),
			want:     lookup{Status: 503, Code: "upstream_unavailable", Detail: "contacts is unavailable"}},
		{name: "a provider that fails passes on", record: RecordRef{KindContact, 1},
			contacts: contactsapi.New(answering(t, http.StatusInternalServerError), internalSecret),
			want:     lookup{Status: 502, Code: "upstream_unavailable", Detail: "contacts failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &Service{contacts: tt.contacts, leads: leadsClient}
			if s.contacts == nil {
				s.contacts = contactsClient
			}
			var got lookup
			var err error
			got.Email, err = s.recordEmail(context.Background(), tt.record)
			if err != nil {
				p := problem.From(err)
				got.Status, got.Code, got.Detail = p.Status, p.Code, p.Detail
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("recordEmail(%v) (-want +got):\n%s", tt.record, diff)
			}
		})
	}
}

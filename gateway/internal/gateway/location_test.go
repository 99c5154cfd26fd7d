package gateway

import "testing"

func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, body, want string
	}{
		{"/contacts", `{"success":true,"data":{"id":42}}`, "/api/contacts/42"},
		{"/contacts/7/notes", `{"data":{"id":5,"content":"x"}}`, "/api/contacts/7/notes/5"},
		{"/deals/12/quotes", `{"data":{"id":4}}`, "/api/quotes/4"},
		{"/contracts/3/executed", `{"data":{"id":3}}`, "/api/contracts/3/executed"},
		{"/public/leads", `{"data":{"id":88,"submission_id":301}}`, "/api/leads/88"},
		{"/deal-stages", `{"data":{"id":9}}`, "/api/deal-stages/9"},
		{"/contacts", `{"data":{"id":null}}`, ""},
		{"/contacts", `{"data":{"id":"12; rm"}}`, ""},
		{"/contacts", `{"data":{"id":-1}}`, ""},
		{"/contacts", `not json`, ""},
	}
	for _, tc := range tests {
		if got := createdLocation(tc.path, []byte(tc.body)); got != tc.want {
			t.Errorf("createdLocation(%q, %s) = %q, want %q", tc.path, tc.body, got, tc.want)
		}
	}
}

package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/fault"
)

// hosts resolves the names a test gives it, and no other.
type hosts map[string]string

func (h hosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := h[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, errors.New("no such host")
}

// TestValidateCreate: every rule of a subscription's input under the
// production policy (https only, private addresses refused), each
// refusal an invalid-input fault naming the field and why.
func TestValidateCreate(t *testing.T) {
	t.Parallel()
	policy := URLPolicy{Resolver: hosts{"hooks.example.com": "93.184.216.34", "inside.example.com": "10.1.2.3"}}
	ok := "https://hooks.example.com/crm"
	tests := []struct {
		name  string
		body  string
		field string
		msg   string
	}{
		{"url missing", `{"events":["*"]}`, "url", "is required"},
		{"url empty", `{"url":"","events":["*"]}`, "url", "is required"},
		{"url relative", `{"url":"/crm","events":["*"]}`, "url", "must be an absolute URL"},
		{"http when not allowed", `{"url":"http://hooks.example.com/","events":["*"]}`, "url", "must use https"},
		{"ftp", `{"url":"ftp://hooks.example.com/","events":["*"]}`, "url", "must use https"},
		{"file", `{"url":"file:///etc/passwd","events":["*"]}`, "url", "must use https"},
		{"gopher", `{"url":"gopher://hooks.example.com/","events":["*"]}`, "url", "must use https"},
		{"userinfo", `{"url":"https://u:p@hooks.example.com/","events":["*"]}`, "url", "must not contain a user name or password"},
		{"loopback", `{"url":"https://127.0.0.1/","events":["*"]}`, "url", "must not point to a private, loopback or otherwise reserved address"},
		{"private", `{"url":"https://10.0.0.1/","events":["*"]}`, "url", "must not point to a private, loopback or otherwise reserved address"},
		{"metadata", `{"url":"https://169.254.169.254/latest","events":["*"]}`, "url", "must not point to a private, loopback or otherwise reserved address"},
		{"v6 loopback", `{"url":"https://[::1]/","events":["*"]}`, "url", "must not point to a private, loopback or otherwise reserved address"},
		{"mapped loopback", `{"url":"https://[::ffff:127.0.0.1]/","events":["*"]}`, "url", "must not point to a private, loopback or otherwise reserved address"},
		{"name resolving inside", `{"url":"https://inside.example.com/","events":["*"]}`, "url", "must not point to a private, loopback or otherwise reserved address"},
		{"url too long", `{"url":"` + ok + "?" + strings.Repeat("a", 2048) + `","events":["*"]}`, "url", "must be at most 2048 characters"},
		{"events missing", `{"url":"` + ok + `"}`, "events", "is required"},
		{"events empty", `{"url":"` + ok + `","events":[]}`, "events", "must name at least one event type"},
		{"event unknown", `{"url":"` + ok + `","events":["contact.created","contact.exploded"]}`, "events[1]", `must be an event type (see the webhooks section) or "*"`},
		{"ping is not subscribable", `{"url":"` + ok + `","events":["ping"]}`, "events[0]", `must be an event type (see the webhooks section) or "*"`},
		{"description too long", `{"url":"` + ok + `","events":["*"],"description":"` + strings.Repeat("d", 501) + `"}`, "description", "must be at most 500 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var in webhooksapi.WebhookInput
			if err := json.Unmarshal([]byte(tt.body), &in); err != nil {
				t.Fatal(err)
			}
			var got *fault.Error
			if err := Validate(t.Context(), &in, true, policy); !errors.As(err, &got) {
				t.Fatalf("Validate = %v, want a fault", err)
			}
			want := fault.Validation(fault.Field{Field: tt.field, Message: tt.msg})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fault (-want +got)\n%s", diff)
			}
		})
	}
}

// TestValidateUpdate: an update needs no field, checks those sent by the
// create's rules (reporting each bad one), and sorts and dedupes events.
func TestValidateUpdate(t *testing.T) {
	t.Parallel()
	policy := URLPolicy{AllowHTTP: true, AllowPrivate: true}
	tests := []struct {
		name       string
		body       string
		wantFields []string
		wantEvents []string
	}{
		{"nothing sent", `{}`, nil, nil},
		{"description only", `{"description":"billing"}`, nil, nil},
		{"events sorted and deduplicated", `{"events":["deal.created","*","deal.created"]}`, nil, []string{"*", "deal.created"}},
		{"every bad field reported", `{"url":"","events":[]}`, []string{"url", "events"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var in webhooksapi.WebhookInput
			if err := json.Unmarshal([]byte(tt.body), &in); err != nil {
				t.Fatal(err)
			}
			var fields []string
			if err := Validate(t.Context(), &in, false, policy); err != nil {
				var f *fault.Error
				if !errors.As(err, &f) || f.Kind != fault.KindInvalid {
					t.Fatalf("Validate = %v, want an invalid-input fault", err)
				}
				for _, fe := range f.Fields {
					fields = append(fields, fe.Field)
				}
			}
			if diff := cmp.Diff(tt.wantFields, fields); diff != "" {
				t.Errorf("fields (-want +got)\n%s", diff)
			}
			var events []string
			if in.Events != nil {
				events = *in.Events
			}
			if diff := cmp.Diff(tt.wantEvents, events); diff != "" {
				t.Errorf("events (-want +got)\n%s", diff)
			}
		})
	}
}

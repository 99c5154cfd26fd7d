package contracts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

const secret = "domain-test-secret-0123456789"

// memStore keeps templates and contracts in memory: enough of
// contracts.Store for the rules that need no database (the embedded nil
// interface panics on anything else, so a test cannot lean on it unseen).
type memStore struct {
	contracts.Store
	mu        sync.Mutex
	templates map[int64]contracts.Template
	contracts map[int64]contracts.Contract
	next      int64
}

func newMemStore() *memStore {
	return &memStore{templates: map[int64]contracts.Template{}, contracts: map[int64]contracts.Contract{}}
}

func (m *memStore) GetTemplate(_ context.Context, id int64) (contracts.Template, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.templates[id]
	if !ok {
		return contracts.Template{}, fault.NotFound("template")
	}
	return t, nil
}

func (m *memStore) CreateTemplate(_ context.Context, t contracts.Template) (contracts.Template, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	t.ID = m.next
	m.templates[t.ID] = t
	return t, nil
}

func (m *memStore) UpdateTemplate(_ context.Context, t contracts.Template) (contracts.Template, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.templates[t.ID] = t
	return t, nil
}

func (m *memStore) CreateContract(_ context.Context, c contracts.Contract, prefix string, year int, finish func(*contracts.Contract) error) (contracts.Contract, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	c.ID = m.next
	c.ContractNumber = prefix + "-test"
	if err := finish(&c); err != nil {
		return contracts.Contract{}, err
	}
	m.contracts[c.ID] = c
	return c, nil
}

func (m *memStore) GetContract(_ context.Context, id int64) (contracts.Contract, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.contracts[id]
	if !ok {
		return contracts.Contract{}, fault.NotFound("contract")
	}
	return c, nil
}

func (m *memStore) UpdateContract(_ context.Context, id int64, apply func(*contracts.Contract) error) (contracts.Contract, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.contracts[id]
	if !ok {
		return contracts.Contract{}, fault.NotFound("contract")
	}
	if err := apply(&c); err != nil {
		return contracts.Contract{}, err
	}
	m.contracts[id] = c
	return c, nil
}

// noRenderer is never reached by these rules.
type noRenderer struct{}

func (noRenderer) Render(context.Context, renderq.Job, renderq.Priority, string) ([]byte, error) {
	return nil, errors.New("not rendering in a domain test")
}

// domain is a Service on memory and deals' owner-tested fake, with one
// template and one deal.
type domain struct {
	svc      *contracts.Service
	store    *memStore
	template int64
	deal     int64
}

func newDomain(t *testing.T) domain {
	t.Helper()
	_, deals := dealsapitest.NewFake(secret, dealsapitest.References{}).Start(t)
	dealID, err := deals.CreateDeal(t.Context(), "deal-1", dealsapi.CreateDealRequest{Title: "Acme deal", Value: "100.00", SourceLeadID: 1})
	if err != nil {
		t.Fatal(err)
	}
	st := newMemStore()
	svc, err := contracts.NewService(contracts.Deps{Store: st, Deals: deals, Renderer: noRenderer{},
		Now: func() time.Time { return time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := svc.CreateTemplate(t.Context(), input[contracts.TemplateInput](t,
		`{"name": "Standard", "content": "<p>{{deal.title}} {{contract.number}}</p>"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return domain{svc: svc, store: st, template: tpl.ID, deal: dealID}
}

// input decodes a body as the edge does, for readable tables.
func input[T any](t *testing.T, body string) T {
	t.Helper()
	var in T
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return in
}

// invalidFields are the fields of an invalid-input fault, in order, or
// the error itself when it is another one.
func invalidFields(t *testing.T, err error) []string {
	t.Helper()
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.KindInvalid || f.Code != "validation_failed" {
		t.Fatalf("error %v is not invalid input", err)
	}
	var fields []string
	for _, fe := range f.Fields {
		fields = append(fields, fe.Field)
	}
	return fields
}

func TestCanTransition(t *testing.T) {
	t.Parallel()
	allowed := map[contracts.Status][]contracts.Status{
		contracts.Draft:      {contracts.Active, contracts.Archived},
		contracts.Active:     {contracts.Executed, contracts.Expired, contracts.Terminated, contracts.Archived},
		contracts.Executed:   {contracts.Expired, contracts.Terminated, contracts.Archived},
		contracts.Expired:    {contracts.Active, contracts.Archived},
		contracts.Terminated: {contracts.Archived},
		contracts.Archived:   nil,
	}
	for _, from := range contracts.Statuses {
		var got []contracts.Status
		for _, to := range contracts.Statuses {
			if contracts.CanTransition(contracts.Status(from), contracts.Status(to)) {
				got = append(got, contracts.Status(to))
			}
		}
		if diff := cmp.Diff(allowed[contracts.Status(from)], got); diff != "" {
			t.Errorf("from %s (-want +got):\n%s", from, diff)
		}
	}
}

// TestCreateContractRefusals: a new contract's input is checked field by
// field, every problem at once; a deal or template the lookups do not find
// is named on its field.
func TestCreateContractRefusals(t *testing.T) {
	t.Parallel()
	d := newDomain(t)
	ids := func(deal, tpl int64, rest string) string {
		return fmt.Sprintf(`{"deal_id": %d, "template_id": %d%s}`, deal, tpl, rest)
	}
	tests := []struct {
		name   string
		body   string
		fields []string
	}{
		{"missing everything", `{}`, []string{"deal_id", "template_id", "title"}},
		{"missing deal", fmt.Sprintf(`{"template_id": %d, "title": "x"}`, d.template), []string{"deal_id"}},
		{"missing template", `{"deal_id": 1, "title": "x"}`, []string{"template_id"}},
		{"null ids", `{"deal_id": null, "template_id": null, "title": "x"}`, []string{"deal_id", "template_id"}},
		{"negative ids", `{"deal_id": -1, "template_id": -2, "title": "x"}`, []string{"deal_id", "template_id"}},
		{"blank title", ids(d.deal, d.template, `, "title": "  "`), []string{"title"}},
		{"unknown deal", ids(999, d.template, `, "title": "x"`), []string{"deal_id"}},
		{"unknown template", ids(d.deal, 999, `, "title": "x"`), []string{"template_id"}},
		{"unknown both", ids(999, 999, `, "title": "x"`), []string{"template_id", "deal_id"}},
		{"end before start", ids(d.deal, d.template, `, "title": "x", "start_date": "2026-05-01", "end_date": "2026-04-30"`), []string{"end_date"}},
		{"bad dates", ids(d.deal, d.template, `, "title": "x", "start_date": "2026-02-30", "end_date": "tomorrow"`), []string{"start_date", "end_date"}},
		{"year 0", ids(d.deal, d.template, `, "title": "x", "start_date": "0000-01-01"`), []string{"start_date"}},
		{"term past year 9999", ids(d.deal, d.template, `, "title": "x", "start_date": "9999-06-01", "term_months": 12`), []string{"term_months"}},
		{"NUL in title", ids(d.deal, d.template, `, "title": "a\u0000b"`), []string{"title"}},
		{"unknown tag in content", ids(d.deal, d.template, `, "title": "x", "content": "<p>{{deal.nope}}</p>"`), []string{"content"}},
		{"not draft", ids(d.deal, d.template, `, "title": "x", "status": "active"`), []string{"status"}},
		{"absurd length in content", ids(d.deal, d.template, `, "title": "x", "content": "<div style=\"height: 9999mm\">x</div>"`), []string{"content"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := d.svc.CreateContract(t.Context(), input[contracts.ContractInput](t, tc.body), nil)
			if diff := cmp.Diff(tc.fields, invalidFields(t, err)); diff != "" {
				t.Errorf("invalid fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCreateContractFromDeal: the contract takes the deal's merge data
// through deals' client (here its owner-tested fake) and the template's
// default term.
func TestCreateContractFromDeal(t *testing.T) {
	t.Parallel()
	d := newDomain(t)
	in := input[contracts.ContractInput](t, `{"title": "Licence", "start_date": "2026-04-01"}`)
	in.DealID = d.deal
	in.TemplateID = d.template
	c, err := d.svc.CreateContract(t.Context(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		DealID                         int64
		DealTitle, Status, Content     string
		TermMonths                     int
		EffectiveDate, TerminationDate string
	}
	want := shown{d.deal, "Acme deal", "draft", "<p>Acme deal CTR-test</p>", contracts.DefaultTermMonths, "2026-04-01", "2029-04-01"}
	got := shown{c.DealID, c.DealTitle, string(c.Status), c.Content, c.TermMonths, c.EffectiveDate, c.TerminationDate}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contract (-want +got):\n%s", diff)
	}
}

// TestUpdateContractTransitions walks status paths through UpdateContract:
// a move the table forbids is invalid_transition and changes nothing.
func TestUpdateContractTransitions(t *testing.T) {
	t.Parallel()
	d := newDomain(t)
	type step struct {
		to string
		ok bool
	}
	paths := [][]step{
		{{"active", true}, {"executed", true}, {"active", false}, {"expired", true}, {"active", true}, {"terminated", true}, {"active", false}, {"archived", true}, {"draft", false}},
		{{"executed", false}, {"expired", false}, {"archived", true}, {"active", false}},
		{{"active", true}, {"draft", false}, {"archived", true}},
	}
	for _, path := range paths {
		base := contracts.ContractInput{}
		base.DealID = d.deal
		base.TemplateID = d.template
		base.Title = "Licence agreement"
		c, err := d.svc.CreateContract(t.Context(), base, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range path {
			in := base
			in.Status.Set, in.Status.Value = true, s.to
			got, err := d.svc.UpdateContract(t.Context(), c.ID, in)
			switch {
			case s.ok && err != nil:
				t.Fatalf("to %s: %v", s.to, err)
			case s.ok && string(got.Status) != s.to:
				t.Fatalf("to %s: status %s", s.to, got.Status)
			case !s.ok && (!errors.Is(err, fault.Conflict("invalid_transition", "")) || fault.KindOf(err) != fault.KindConflict):
				t.Fatalf("to %s: %v, want invalid_transition", s.to, err)
			}
		}
	}
	t.Run("bad status value", func(t *testing.T) {
		t.Parallel()
		in := input[contracts.ContractInput](t, `{"title": "x", "status": "signed"}`)
		in.DealID = d.deal
		in.TemplateID = d.template
		_, err := d.svc.UpdateContract(t.Context(), 1, in)
		if diff := cmp.Diff([]string{"status"}, invalidFields(t, err)); diff != "" {
			t.Errorf("invalid fields (-want +got):\n%s", diff)
		}
	})
}

// TestTemplateRefusals: a template's fields, its tags and its lengths are
// checked on create and on update, every problem at once.
func TestTemplateRefusals(t *testing.T) {
	t.Parallel()
	d := newDomain(t)
	tests := []struct {
		name     string
		update   bool
		body     string
		fields   []string
		messages []string
	}{
		{"missing name and content", false, `{}`, []string{"name", "content"}, nil},
		{"unknown tags everywhere", false, `{"name": "x", "content": "<p>{{deal.foo}} {{deal.title}} {{page}}</p>",
			"header_left": "{{ licensee.nope }}", "footer_right": "{{page}} {{contract.bogus}}"}`,
			[]string{"content", "content", "header_left", "footer_right"},
			[]string{"unknown merge tag {{deal.foo}}", "unknown merge tag {{page}}", "unknown merge tag {{ licensee.nope }}", "unknown merge tag {{contract.bogus}}"}},
		{"bad prefix and term", false, `{"name": "x", "content": "<p>x</p>", "number_prefix": "A B", "default_term_months": 0}`,
			[]string{"number_prefix", "default_term_months"}, nil},
		{"update clears name", true, `{"name": "", "content": "<p>x</p>"}`, []string{"name"}, nil},
		{"update unknown tag", true, `{"name": "x", "content": "{{quote.nothing}}"}`, []string{"content"}, []string{"unknown merge tag {{quote.nothing}}"}},
		{"absurd length", false, `{"name": "x", "content": "<div style=\"height: 9999mm\">{{deal.title}}</div>"}`, []string{"content"},
			[]string{`style "height: 9999mm" is too large: lengths are at most 297mm (the height of an A4 page)`}},
		{"update absurd length", true, `{"name": "x", "content": "<p style=\"line-height: 999\">x</p>"}`, []string{"content"},
			[]string{`style "line-height: 999" is too large: a line height is at most 10 times the font size`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input[contracts.TemplateInput](t, tc.body)
			var err error
			if tc.update {
				_, err = d.svc.UpdateTemplate(t.Context(), d.template, in)
			} else {
				_, err = d.svc.CreateTemplate(t.Context(), in, nil)
			}
			if diff := cmp.Diff(tc.fields, invalidFields(t, err)); diff != "" {
				t.Errorf("invalid fields (-want +got):\n%s", diff)
			}
			if tc.messages == nil {
				return
			}
			var f *fault.Error
			errors.As(err, &f)
			var got []string
			for _, fe := range f.Fields {
				got = append(got, fe.Message)
			}
			if diff := cmp.Diff(tc.messages, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFrozenContent: once a contract is executed, terminated or archived
// its content can no longer change, by a PUT with content or by
// regeneration (409 conflict); its title still can.
func TestFrozenContent(t *testing.T) {
	t.Parallel()
	d := newDomain(t)
	base := contracts.ContractInput{}
	base.DealID = d.deal
	base.TemplateID = d.template
	base.Title = "Licence agreement"
	for _, st := range contracts.Statuses {
		status := contracts.Status(st)
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			c, err := d.svc.CreateContract(t.Context(), base, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.store.UpdateContract(t.Context(), c.ID, func(c *contracts.Contract) error {
				c.Status = status
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			content := base
			content.Content.Set, content.Content.Value = true, "<p>changed</p>"
			_, contentErr := d.svc.UpdateContract(t.Context(), c.ID, content)
			_, regenerateErr := d.svc.Regenerate(t.Context(), c.ID)
			retitled := base
			retitled.Title = "Final"
			_, titleErr := d.svc.UpdateContract(t.Context(), c.ID, retitled)

			refused := func(err error) bool {
				return fault.KindOf(err) == fault.KindConflict && errors.Is(err, fault.Conflict("conflict", ""))
			}
			type outcome struct{ ContentRefused, RegenerateRefused, TitleRefused bool }
			want := outcome{contracts.Frozen(status), contracts.Frozen(status), false}
			got := outcome{refused(contentErr), refused(regenerateErr), titleErr != nil}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s\ncontent: %v\nregenerate: %v\ntitle: %v", st, diff, contentErr, regenerateErr, titleErr)
			}
		})
	}
	if got := []bool{contracts.Frozen(contracts.Executed), contracts.Frozen(contracts.Terminated), contracts.Frozen(contracts.Archived),
		contracts.Frozen(contracts.Draft), contracts.Frozen(contracts.Active), contracts.Frozen(contracts.Expired)}; !slices.Equal(got, []bool{true, true, true, false, false, false}) {
		t.Errorf("Frozen = %v", got)
	}
}

package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
)

var propertyTypes = []string{"property.created", "property.updated", "property.deleted"}

// TestPropertyEventsNeedAdmin: custom-field definitions are read at
// admin-only routes, so their events go to admins only. An admin person
// subscribes to them, and so does a token holding admin; a token holding
// every other scope is refused each type with 403 insufficient_scope
// naming admin (nothing stored), and an admin may not add them to such a
// token's subscription; a person without the admin role reaches no
// webhooks route at all, these types included.
func TestPropertyEventsNeedAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	const url = "http://127.0.0.1:1/hook"

	h := e.create(url, propertyTypes...)
	if diff := cmp.Diff([]string{"property.created", "property.deleted", "property.updated"}, h.Events); diff != "" {
		t.Errorf("admin's subscription events (-want +got):\n%s", diff)
	}
	e.createAs(e.tokenFor(601, "webhooks:write", "admin"), url, "property.updated")

	broad := e.tokenFor(602, "webhooks:write", "contacts:write", "leads:write", "deals:write", "contracts:write", "emails:write")
	for _, typ := range propertyTypes {
		r := e.do("POST", "/webhooks", broad, map[string]any{"url": url, "events": []string{"contact.created", typ}})
		wantInsufficientScope(t, r, "admin", "this access token lacks the admin scope, which "+typ+" events need")
	}
	star := e.createAs(broad, url, "*")
	r := e.do("PUT", hookPath(star.ID, ""), e.admin, `{"events":["property.deleted"]}`)
	wantInsufficientScope(t, r, "admin", "the access token owning this subscription lacks the admin scope, which property.deleted events need")

	person := e.issuer.User(t, 3)
	r = e.do("POST", "/webhooks", person, map[string]any{"url": url, "events": []string{"property.created"}})
	wantProblem(t, r, http.StatusForbidden, "forbidden", "this action requires the admin role")
	r = e.do("GET", "/events?type=property.created", person, nil)
	wantProblem(t, r, http.StatusForbidden, "forbidden", "this action requires the admin role")

	if n := decode[page[hook]](t, e.do("GET", "/webhooks", e.admin, nil)).Total; n != 3 {
		t.Errorf("%d webhooks stored, want 3 (the refused ones not among them)", n)
	}
	if got := decode[record[hook]](t, e.do("GET", hookPath(star.ID, ""), e.admin, nil)).Data.Events; !cmp.Equal(got, []string{"*"}) {
		t.Errorf("refused update changed the events to %v", got)
	}
}

// producerMigrate is what a context that owns custom fields has in its
// database: the definitions, the outbox and record tables.
func producerMigrate(ctx context.Context, d *db.DB) error {
	if err := customfield.Migrate(ctx, d); err != nil {
		return err
	}
	if err := outbox.Migrate(ctx, d); err != nil {
		return err
	}
	_, err := d.Exec(ctx, `CREATE TABLE IF NOT EXISTS records (id bigserial PRIMARY KEY, custom_fields jsonb NOT NULL DEFAULT '{}')`)
	return err
}

// TestPropertyEventsFlowFromTheContexts: definition changes made by the
// custom-field store of contacts (companies), leads and deals, published by
// the real relay on each context's stream, are stored once each and
// delivered like every domain event: to an admin's subscription to
// property.created and a "*" subscription of a token holding admin (which
// gets no record events: admin reads no records), not to a "*"
// subscription of a token without it, which still gets the records' events
// with their custom_fields as sent. The feed shows the definitions to an
// admin and the admin token, not to the narrow token.
func TestPropertyEventsFlowFromTheContexts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	adminRc, tokenRc, narrowRc := newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil)
	adminHook := e.create(adminRc.url(), "property.created", "contact.updated")
	adminToken := e.tokenFor(601, "webhooks:write", "admin")
	narrow := e.tokenFor(602, "webhooks:write", "contacts:read", "leads:read", "deals:read")
	tokenHook := e.createAs(adminToken, tokenRc.url(), "*")
	narrowHook := e.createAs(narrow, narrowRc.url(), "*")

	producer := testdb.New(t, "producer", producerMigrate, customfield.Migrations, outbox.Migrations)
	streams := map[string]string{}
	for _, source := range []string{"contacts", "leads", "deals"} {
		stream := "test:webhooks:" + source + ":" + randHex(6)
		streams[source] = stream
		c := &outbox.Consumer{Redis: e.rdb, Stream: stream, Group: ingest.Group, Name: "test",
			HandleBatch: e.ingest.Batch(source), Log: e.log, RetryIdle: time.Second}
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); c.Run(cctx) }()
		t.Cleanup(func() { cancel(); <-done; e.rdb.Del(context.Background(), stream) })
	}

	companies := customfield.Object{Name: propertyapi.Companies, Table: "records"}
	leads := customfield.Object{Name: propertyapi.Leads, Table: "records"}
	deals := customfield.Object{Name: propertyapi.Deals, Table: "records"}
	contactsStore := customfield.Store{DB: producer, Stream: streams["contacts"]}
	leadsStore := customfield.Store{DB: producer, Stream: streams["leads"]}
	dealsStore := customfield.Store{DB: producer, Stream: streams["deals"]}
	var want []propertyapi.Property // in the order of the feed
	step := func(d propertyapi.Property, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
	}
	step(contactsStore.Create(ctx, companies, propertyapi.PropertyInput{Name: "erp_id", Label: "ERP id", Type: "text", Unique: true}))
	step(leadsStore.Create(ctx, leads, propertyapi.PropertyInput{Name: "budget", Label: "Budget", Type: "number"}))
	step(dealsStore.Create(ctx, deals, propertyapi.PropertyInput{Name: "tier", Label: "Tier", Type: "enum",
		Options: []propertyapi.Option{{Value: "gold", Label: "Gold"}}}))
	step(leadsStore.Update(ctx, leads, "budget", propertyapi.PropertyUpdate{Label: patch.Of("Budget (EUR)")}))
	gone, err := dealsStore.Get(ctx, propertyapi.Deals, "tier")
	if err != nil {
		t.Fatal(err)
	}
	step(gone, dealsStore.Delete(ctx, deals, "tier"))
	// A record event carrying custom_fields, as contacts publishes it.
	contact := map[string]any{"id": 5, "first_name": "Ada", "custom_fields": map[string]any{"erp_id": "A-1", "tier": nil}}
	err = producer.InTx(ctx, func(tx pgx.Tx) error {
		return outbox.Add(ctx, tx, streams["contacts"], "contact.updated", "5", contact)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each definition change also wrote its audit entry, on crm:audit,
	// which no webhook reads: five, dropped here so the test publishes
	// nothing on the shared audit stream.
	if tag, err := producer.Exec(ctx, `DELETE FROM outbox WHERE stream = $1`, identityapi.AuditStream); err != nil || tag.RowsAffected() != 5 {
		t.Fatalf("audit entries in the outbox: %v, %v", tag, err)
	}
	relay := &outbox.Relay{DB: producer, Redis: e.rdb, Log: e.log}
	if n, err := relay.Once(ctx); err != nil || n != 6 {
		t.Fatalf("relay = %d, %v", n, err)
	}

	feedOf := func(token, query string) []sentEvent {
		t.Helper()
		r := e.do("GET", "/events"+query, token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("feed%s: %d %s", query, r.status, r.body)
		}
		return decode[feed](t, r).Data
	}
	eventually(t, "six events in the feed", func() bool { return len(feedOf(e.admin, "")) == 6 })
	// Each stream is read on its own, so only the order within one holds.
	bySource := map[string][]string{}
	var gotDefs []propertyapi.Property
	for _, ev := range feedOf(e.admin, "?type=property.created,property.updated,property.deleted") {
		var d propertyapi.Property
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		bySource[d.Object] = append(bySource[d.Object], ev.Type+" "+d.Object+"."+d.Name)
		gotDefs = append(gotDefs, d)
	}
	wantBySource := map[string][]string{
		"companies": {"property.created companies.erp_id"},
		"leads":     {"property.created leads.budget", "property.updated leads.budget"},
		"deals":     {"property.created deals.tier", "property.deleted deals.tier"},
	}
	if diff := cmp.Diff(wantBySource, bySource); diff != "" {
		t.Fatalf("property events in the feed (-want +got):\n%s", diff)
	}
	sortedKeys := func(ds []propertyapi.Property) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Object+"."+d.Name+" "+d.Type+" "+d.Label+" "+d.CreatedAt.String())
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff(sortedKeys(want), sortedKeys(gotDefs)); diff != "" {
		t.Errorf("definitions carried (-want +got):\n%s", diff)
	}
	for _, ev := range feedOf(e.admin, "?type=property.deleted") {
		var d propertyapi.Property
		_ = json.Unmarshal(ev.Data, &d)
		if d.Type != "enum" || len(d.Options) != 1 || d.Options[0].Value != "gold" {
			t.Errorf("property.deleted carries %s, want the definition as it last was", ev.Data)
		}
	}
	// admin is no read scope of records: the contact.updated is not the
	// admin token's.
	if n := len(feedOf(adminToken, "")); n != 5 {
		t.Errorf("the admin token's feed has %d events, want the 5 property events", n)
	}
	narrowFeed := feedOf(narrow, "")
	if len(narrowFeed) != 1 || narrowFeed[0].Type != "contact.updated" {
		t.Errorf("the narrow token's feed %+v, want the contact.updated only", narrowFeed)
	}
	wantContact, _ := json.Marshal(contact)
	if len(narrowFeed) == 1 && !jsonEqual(t, wantContact, narrowFeed[0].Data) {
		t.Errorf("contact.updated data %s, want %s (custom_fields untouched)", narrowFeed[0].Data, wantContact)
	}
	r := e.do("GET", "/events?type=property.created", narrow, nil)
	wantInsufficientScope(t, r, "admin", "this access token lacks the admin scope, which property.created events need")

	eventually(t, "the deliveries", func() bool { return adminRc.count() == 4 && tokenRc.count() == 5 && narrowRc.count() == 1 })
	time.Sleep(200 * time.Millisecond)
	if n := len(e.deliveries(narrowHook.ID, "")); n != 1 {
		t.Errorf("the narrow token's subscription has %d deliveries, want 1", n)
	}
	if n := len(e.deliveries(tokenHook.ID, "")); n != 5 {
		t.Errorf("the admin token's subscription has %d deliveries, want 5", n)
	}
	var adminGot []string
	for _, h := range adminRc.got() {
		verify(t, adminHook.Secret, h)
		var ev sentEvent
		if err := json.Unmarshal(h.body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "contact.updated" {
			if !jsonEqual(t, wantContact, ev.Data) {
				t.Errorf("delivered contact.updated data %s, want %s", ev.Data, wantContact)
			}
			adminGot = append(adminGot, ev.Type)
			continue
		}
		var d propertyapi.Property
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		adminGot = append(adminGot, ev.Type+" "+d.Object+"."+d.Name)
	}
	wantAdmin := []string{"contact.updated", "property.created companies.erp_id", "property.created deals.tier", "property.created leads.budget"}
	slices.Sort(adminGot)
	if diff := cmp.Diff(wantAdmin, adminGot); diff != "" {
		t.Errorf("admin's receiver (-want +got):\n%s", diff)
	}
	narrowBody := narrowRc.got()[0].body
	if !strings.Contains(string(narrowBody), `"custom_fields"`) {
		t.Errorf("delivered to the narrow token without custom_fields: %s", narrowBody)
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return cmp.Equal(va, vb)
}

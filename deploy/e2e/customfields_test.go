package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestCustomFieldsAcrossContexts: an admin defines fields on leads,
// contacts and deals; a lead's values reach the contact and the deal
// where a field of the same name and type exists; lists filter by them;
// a batch writes contacts once under one Idempotency-Key; and the served
// document types the fields, revalidated by its ETag. It is not parallel:
// a field it defines shows on every record of its object, so it runs
// before the tests that compare records over time.
func TestCustomFieldsAcrossContexts(t *testing.T) {
	adm := admin(t)
	tier, leadOnly := uniq("tier_"), uniq("met_at_")
	tierDef := map[string]any{"name": tier, "label": "Tier " + tier, "type": "enum",
		"options": []map[string]any{{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}}}
	for _, object := range []string{"leads", "contacts", "deals"} {
		must(t, http.StatusCreated)(adm.Do("POST", "/properties/"+object, tierDef))
	}
	must(t, http.StatusCreated)(adm.Do("POST", "/properties/leads", map[string]any{"name": leadOnly, "label": "Met at " + leadOnly, "type": "text"}))

	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
		"first_name": "Grace", "last_name": "Hopper", "email": uniq("grace") + "@navy.test", "company": uniq("Navy "),
		"custom_fields": map[string]any{tier: "gold", leadOnly: "a conference"},
	}))
	if cf := lead.Data()["custom_fields"].(map[string]any); cf[tier] != "gold" || cf[leadOnly] != "a conference" {
		t.Fatalf("lead custom_fields: %s", lead)
	}
	bad := must(t, http.StatusUnprocessableEntity)(adm.Do("PUT", fmt.Sprintf("/leads/%d", lead.ID()), map[string]any{
		"first_name": "Grace", "last_name": "Hopper", "custom_fields": map[string]any{tier: "platinum"}}))
	if errs := bad.JSON["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["field"] != "custom_fields."+tier {
		t.Errorf("bad option: %s", bad)
	}
	q := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/leads/%d/qualify", lead.ID()),
		map[string]any{"create_company": true, "create_deal": true, "deal_value": "100.00"}))
	contact := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d", int64(q.JSON["contact_id"].(float64))), nil))
	deal := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals/%d", int64(q.JSON["deal_id"].(float64))), nil))
	for name, r := range map[string]*Response{"contact": contact, "deal": deal} {
		cf := r.Data()["custom_fields"].(map[string]any)
		if cf[tier] != "gold" {
			t.Errorf("%s custom_fields[%s] = %v, want gold: %s", name, tier, cf[tier], r)
		}
		if _, ok := cf[leadOnly]; ok {
			t.Errorf("%s carries the lead-only field: %s", name, r)
		}
	}
	list := must(t, http.StatusOK)(adm.Do("GET", "/contacts?cf["+tier+"]=gold", nil))
	if list.JSON["total"] != float64(1) {
		t.Errorf("cf filter: %s", list)
	}
	refused := must(t, http.StatusUnprocessableEntity)(adm.Do("GET", "/contacts?cf["+tier+"][gte]=gold", nil))
	if errs := refused.JSON["errors"].([]any); errs[0].(map[string]any)["field"] != "cf["+tier+"][gte]" {
		t.Errorf("range on an enum: %s", refused)
	}

	batch := adm.With(adm.Token)
	batch.Header.Set("Idempotency-Key", uniq("batch-"))
	body := map[string]any{"inputs": []map[string]any{
		{"first_name": "Ann", "last_name": "One", "email": uniq("ann") + "@batch.test", "custom_fields": map[string]any{tier: "silver"}},
		{"first_name": "Bob", "last_name": "Two", "email": uniq("bob") + "@batch.test"},
	}}
	first := must(t, http.StatusOK)(batch.Do("POST", "/contacts/batch/create", body))
	again := must(t, http.StatusOK)(batch.Do("POST", "/contacts/batch/create", body))
	if first.String() != again.String() || len(first.JSON["data"].([]any)) != 2 {
		t.Errorf("batch replay differs:\n%s\n%s", first, again)
	}
	silver := must(t, http.StatusOK)(adm.Do("GET", "/contacts?cf["+tier+"]=silver", nil))
	if silver.JSON["total"] != float64(1) {
		t.Errorf("batch wrote %v silver contacts, want 1: %s", silver.JSON["total"], silver)
	}

	base := strings.TrimSuffix(stack.Gateway, "/api")
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" || !strings.Contains(string(doc), `"`+tier+`"`) {
		t.Fatalf("document: %d, ETag %q, typed %v", resp.StatusCode, etag, strings.Contains(string(doc), tier))
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/openapi.json", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Another test may define a field meanwhile; then the document changed.
	if resp.StatusCode != http.StatusNotModified && resp.Header.Get("ETag") == etag {
		t.Errorf("revalidation: %d with the same ETag", resp.StatusCode)
	}
}

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// traced returns a client whose requests carry a fresh sampled W3C trace
// context, with the trace id and the caller's span id.
func traced(t *testing.T, c *Client) (*Client, string, string) {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	tid, sid := hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	tc := c.With(c.Token)
	tc.Header.Set("Traceparent", "00-"+tid+"-"+sid+"-01")
	return tc, tid, sid
}

// hop is a call from one service's client span to another's server span;
// from the gateway, which traces a proxied request as one span, from its
// server span.
type hop struct{ from, to string }

// waitTrace polls the collector until the trace holds every hop (and
// every span named in jobs), then checks that each span's parent is in
// the trace or is the caller's span.
func waitTrace(t *testing.T, tid, callerSpan string, hops []hop, jobs []hop) []span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		spans := traces.trace(tid)
		missing := missingHops(spans, hops, jobs)
		if len(missing) == 0 {
			byID := map[string]span{}
			for _, s := range spans {
				byID[s.SpanID] = s
			}
			for _, s := range spans {
				if _, ok := byID[s.Parent]; !ok && s.Parent != callerSpan {
					t.Errorf("span %s/%s has parent %s, neither in the trace nor the caller's", s.Service, s.Name, s.Parent)
				}
			}
			return spans
		}
		if time.Now().After(deadline) {
			var got []string
			for _, s := range spans {
				got = append(got, fmt.Sprintf("%s %s %s %s<-%s", s.Service, s.Kind, s.Name, s.SpanID, s.Parent))
			}
			t.Fatalf("trace %s lacks %v; spans:\n%s", tid, missing, strings.Join(got, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// missingHops lists the hops not yet seen: for a call, a server span of
// service to whose parent is a client span of service from (the gateway's
// server span); for a job, a consumer span of to whose parent is a
// producer span of from.
func missingHops(spans []span, calls, jobs []hop) []hop {
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	seen := func(h hop, parentKind, kind string) bool {
		return slices.ContainsFunc(spans, func(s span) bool {
			p, ok := byID[s.Parent]
			return ok && s.Service == h.to && s.Kind == kind && p.Service == h.from && p.Kind == parentKind
		})
	}
	var missing []hop
	for _, h := range calls {
		caller := "SPAN_KIND_CLIENT"
		if h.from == "gateway" {
			caller = "SPAN_KIND_SERVER"
		}
		if !seen(h, caller, "SPAN_KIND_SERVER") {
			missing = append(missing, h)
		}
	}
	for _, h := range jobs {
		if !seen(h, "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER") {
			missing = append(missing, hop{h.from + " (enqueue)", h.to + " (job)"})
		}
	}
	return missing
}

// TestTraceOfQualification: one trace, continuing the client's, runs from
// the gateway through leads to contacts and deals, with SQL spans inside.
func TestTraceOfQualification(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
		"first_name": "Tracy", "last_name": "Trace", "email": uniq("tracy") + "@trace.test", "company": uniq("Tracing "),
	}))
	tc, tid, caller := traced(t, adm)
	must(t, http.StatusOK)(tc.Do("POST", fmt.Sprintf("/leads/%d/qualify", lead.ID()),
		map[string]any{"create_company": true, "create_deal": true, "deal_value": 99}))
	spans := waitTrace(t, tid, caller, []hop{{"gateway", "leads"}, {"leads", "contacts"}, {"leads", "deals"}}, nil)

	var root []span
	for _, s := range spans {
		if s.Parent == caller {
			root = append(root, s)
		}
	}
	if len(root) != 1 || root[0].Service != "gateway" || root[0].Kind != "SPAN_KIND_SERVER" ||
		root[0].Name != "POST /leads/{id}/qualify" {
		t.Errorf("spans under the caller's = %+v, want the gateway's server span POST /leads/{id}/qualify", root)
	}
	if !slices.ContainsFunc(spans, func(s span) bool {
		return s.Service == "deals" && s.Kind == "SPAN_KIND_CLIENT" && strings.HasPrefix(s.Name, "INSERT")
	}) {
		t.Error("no SQL span of deals' insert in the trace")
	}
}

// TestTraceOfContractPDF: the PDF's trace runs from the gateway to
// contracts, through the render queue, into the render worker's job.
func TestTraceOfContractPDF(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Traced Co ")}))
	deal := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": "Traced deal", "value": "10.00", "company_id": co.ID()}))
	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{
		"name": uniq("Traced "), "content": "<p>{{licensee.company_name}} {{contract.number}}</p>",
	}))
	c := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "Traced"}))

	tc, tid, caller := traced(t, adm)
	must(t, http.StatusOK)(tc.Do("GET", fmt.Sprintf("/contracts/%d/pdf", c.ID()), nil))
	waitTrace(t, tid, caller, []hop{{"gateway", "contracts"}}, []hop{{"contracts", "render"}})
}

// TestTraceOfPublicLead: a public lead's trace runs from the gateway to
// intake and on to leads, with the SQL of both. Intake stores and forwards
// concurrent submissions together, in the trace of the first one a batch
// serves; should another test's submission lead the batch, the next try
// leads its own.
func TestTraceOfPublicLead(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("traced form ")}))
	pub := stack.Client()
	pub.Header.Set("X-API-Key", fmt.Sprint(key.Data()["key"]))
	hops := []hop{{"gateway", "intake"}, {"intake", "leads"}}
	for try := 1; ; try++ {
		tc, tid, caller := traced(t, pub)
		must(t, http.StatusCreated)(tc.Do("POST", "/public/leads", map[string]any{
			"first_name": "Tracy", "last_name": "Public", "email": uniq("tracy") + "@trace.test"}))
		deadline := time.Now().Add(5 * time.Second)
		for len(missingHops(traces.trace(tid), hops, nil)) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if len(missingHops(traces.trace(tid), hops, nil)) > 0 && try < 5 {
			continue
		}
		spans := waitTrace(t, tid, caller, hops, nil)
		// Intake stores a submission with a WITH … INSERT statement.
		for svc, statement := range map[string]string{"intake": "WITH", "leads": "INSERT"} {
			if !slices.ContainsFunc(spans, func(s span) bool {
				return s.Service == svc && s.Kind == "SPAN_KIND_CLIENT" && strings.HasPrefix(s.Name, statement)
			}) {
				t.Errorf("no SQL span of %s's %s statement in the trace", svc, statement)
			}
		}
		return
	}
}

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// ruleFile is the shape of a Prometheus rules file (alerting rules only).
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func monitoringFile(t *testing.T, name string) []byte {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "monitoring", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// metricName finds the platform's metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:gateway_|http_|pgxpool_|outbox_|asynq_|webhooks_|dependency_up)[a-z_]*`)

func referencedMetrics(exprs []string) map[string]bool {
	out := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricName.FindAllString(e, -1) {
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				if strings.HasSuffix(m, suf) && strings.Contains(m, "duration_seconds") {
					m = strings.TrimSuffix(m, suf)
				}
			}
			out[m] = true
		}
	}
	return out
}

// TestMonitoringRules: the alert rules parse as a Prometheus rules file,
// every rule is complete, and every metric the rules and the dashboard
// use is one a running stack exports; the gateway's public port serves
// no metrics.
func TestMonitoringRules(t *testing.T) {
	t.Parallel()
	var rules ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(monitoringFile(t, "alerts.yaml")))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	var exprs []string
	names := map[string]bool{}
	for _, g := range rules.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: needs a name and rules", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || names[r.Alert] {
				t.Errorf("group %s: alert name %q empty or repeated", g.Name, r.Alert)
			}
			names[r.Alert] = true
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: expression %q is empty or unbalanced", r.Alert, r.Expr)
			}
			if d, err := time.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("%s: for %q is not a duration", r.Alert, r.For)
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			exprs = append(exprs, r.Expr)
		}
	}
	for _, want := range []string{"GatewayErrorRateHigh", "GatewayLatencyHigh", "QueueLatencyHigh", "OutboxLagHigh"} {
		if !names[want] {
			t.Errorf("no alert %s", want)
		}
	}

	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(monitoringFile(t, "dashboard.json"), &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}

	// A render creates the render queues' series; a request through the
	// gateway its route series.
	adm := admin(t)
	renderPDF(t, adm)
	// A subscription and its ping create the webhooks series.
	rc := newReceiver(t)
	hook, _ := subscribe(t, adm, rc.srv.URL, "contact.created")
	must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/webhooks/%d/test", hook), nil))
	must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Metric", "last_name": uniq("Hook")}))
	eventually(t, "a delivery counted", func() error {
		if len(rc.deliveries(func(d received) bool { return d.Event.Type == "contact.created" })) == 0 {
			return fmt.Errorf("nothing delivered yet")
		}
		return nil
	})
	exported := map[string]bool{}
	scrape := func(url string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", url, resp.StatusCode)
		}
		for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+)`).FindAllSubmatch(b, -1) {
			exported[string(m[1])] = true
		}
	}
	scrape(stack.GatewayOps + "/metrics")
	for _, n := range append(append([]string{}, Services...), "render") {
		scrape(stack.URLs[n] + "/metrics")
	}
	for m := range referencedMetrics(exprs) {
		if !exported[m] {
			t.Errorf("metric %s is used by the rules or the dashboard but exported by no process", m)
		}
	}

	resp, err := http.Get(stack.URLs["gateway"] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("gateway public /metrics = %d, want 404", resp.StatusCode)
	}
}

// renderPDF renders the PDF of a new contract (a job the cache cannot answer).
func renderPDF(t *testing.T, adm *Client) {
	t.Helper()
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Rendered Co ")}))
	deal := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": "Rendered deal", "value": "10.00", "company_id": co.ID()}))
	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{
		"name": uniq("Rendered "), "content": "<p>{{licensee.company_name}} {{contract.number}}</p>",
	}))
	c := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "Rendered"}))
	must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", c.ID()), nil))
}

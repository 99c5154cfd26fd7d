package k8s_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// internetExcept are the ranges an egress rule to the internet must leave
// out: where a cluster's pods, nodes and services live (private and
// carrier-grade NAT ranges), loopback, and link-local with the cloud
// metadata endpoint.
var internetExcept = map[string][]string{
	"0.0.0.0/0": {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16"},
	"::/0":      {"fc00::/7", "fe80::/10", "::1/128"},
}

// TestEgressPolicies: every workload may connect only to DNS, the
// PostgreSQL, Redis and OTLP ports it uses, the services whose *_URL
// settings its code reads, and (mail, webhooks) the internet outside the
// cluster's ranges on their ports.
func TestEgressPolicies(t *testing.T) {
	t.Parallel()
	callees := map[string][]string{}
	for callee, callers := range callersFromCode(t) {
		for _, c := range callers {
			callees[c] = append(callees[c], callee)
		}
	}
	dns := []string{"any:53/TCP", "any:53/UDP"}
	want := map[string][]string{"job crm-db-bootstrap": append(slices.Clone(dns), "any:5432/TCP")}
	for _, name := range processes {
		w := append(slices.Clone(dns), "any:6379/TCP", "any:4317/TCP", "any:4318/TCP")
		if name != "gateway" && name != "render" {
			w = append(w, "any:5432/TCP")
		}
		for _, c := range callees[name] {
			w = append(w, c+":http/TCP")
		}
		switch name {
		case "mail":
			w = append(w, "internet:993/TCP", "internet:143/TCP")
		case "webhooks":
			w = append(w, "internet:443/TCP", "internet:80/TCP")
		}
		want[name] = w
	}
	for _, w := range want {
		slices.Sort(w)
	}
	// The gateway routes to every service; a broken code scan must not
	// shrink its policy unnoticed.
	for _, name := range processes {
		if name != "gateway" && name != "render" && !slices.Contains(callees["gateway"], name) {
			t.Errorf("the code scan misses the gateway calling %s", name)
		}
	}
	for _, l := range layouts {
		t.Run(l.dir, func(t *testing.T) {
			t.Parallel()
			r := load(t, l.dir)
			got := map[string][]string{}
			for _, name := range processes {
				got[name] = reachable(t, r, r.deployments[name].Spec.Template.Metadata.Labels)
			}
			for name, j := range r.jobs {
				got["job "+name] = reachable(t, r, j.Spec.Template.Metadata.Labels)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("where each workload may connect (-want +got):\n%s", diff)
			}
		})
	}
}

// reachable evaluates the egress NetworkPolicies for pods with labels:
// each destination as "any" (a rule without destinations), "internet" (an
// ipBlock of all addresses except internetExcept) or the process whose pods
// a rule selects, with its port and protocol. A pod no egress policy
// selects may connect anywhere: "any:*".
func reachable(t *testing.T, r rendered, labels map[string]string) []string {
	t.Helper()
	return evaluate(r, labels, direction{
		policyType: "Egress", rules: egressRules, anyPeer: "any",
		port: func(port policyPort) string {
			if port.Protocol == "" {
				port.Protocol = "TCP"
			}
			return fmt.Sprintf("%v/%s", port.Port, port.Protocol)
		},
		names: func(policy string, pe peer) []string {
			switch {
			case pe.IPBlock != nil:
				except, ok := internetExcept[pe.IPBlock.CIDR]
				for _, e := range except {
					ok = ok && slices.Contains(pe.IPBlock.Except, e)
				}
				if !ok {
					t.Errorf("policy %s: ipBlock %s except %v is not the internet outside the cluster's ranges", policy, pe.IPBlock.CIDR, pe.IPBlock.Except)
				}
				return []string{"internet"}
			case pe.NamespaceSelector != nil:
				return []string{"namespace?"}
			case pe.PodSelector != nil:
				return selected(r, pe.PodSelector)
			}
			return nil
		},
	})
}

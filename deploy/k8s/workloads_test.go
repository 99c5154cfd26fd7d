package k8s_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// processes are every long-running workload; render is a queue worker
// without a Service.
var processes = []string{"gateway", "identity", "contacts", "leads", "deals", "contracts", "intake", "mail", "webhooks", "render"}

// rendered is one kustomization's output, indexed by kind.
type rendered struct {
	deployments map[string]deployment
	services    map[string]service
	hpas        []hpa
	scaled      []scaledObject
	pdbs        []pdb
	policies    map[string]networkPolicy
	ingresses   []ingress
	namespaces  []object
	jobs        map[string]job
}

func load(t *testing.T, dir string) rendered {
	t.Helper()
	r := rendered{deployments: map[string]deployment{}, services: map[string]service{}, policies: map[string]networkPolicy{}, jobs: map[string]job{}}
	for _, o := range build(t, filepath.Join(deployDir, dir)) {
		switch o.Kind {
		case "Deployment":
			var d deployment
			o.decode(t, &d)
			r.deployments[o.Metadata.Name] = d
		case "Service":
			var s service
			o.decode(t, &s)
			r.services[o.Metadata.Name] = s
		case "HorizontalPodAutoscaler":
			var h hpa
			o.decode(t, &h)
			r.hpas = append(r.hpas, h)
		case "ScaledObject":
			var s scaledObject
			o.decode(t, &s)
			r.scaled = append(r.scaled, s)
		case "PodDisruptionBudget":
			var p pdb
			o.decode(t, &p)
			r.pdbs = append(r.pdbs, p)
		case "NetworkPolicy":
			var p networkPolicy
			o.decode(t, &p)
			r.policies[o.Metadata.Name] = p
		case "Ingress":
			var i ingress
			o.decode(t, &i)
			r.ingresses = append(r.ingresses, i)
		case "Job":
			var j job
			o.decode(t, &j)
			r.jobs[o.Metadata.Name] = j
		case "Namespace":
			r.namespaces = append(r.namespaces, o)
		}
	}
	return r
}

var layouts = []struct {
	dir        string
	production bool
}{
	{"k8s/base", false},
	{"k8s/overlays/production", true},
}

func TestEveryProcessIsDeployable(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.dir, func(t *testing.T) {
			t.Parallel()
			r := load(t, l.dir)
			for _, name := range processes {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					d, ok := r.deployments[name]
					if !ok {
						t.Fatalf("no Deployment %s", name)
					}
					pod := d.Spec.Template.Metadata.Labels
					if !d.Spec.Selector.matches(pod) {
						t.Errorf("selector %v does not match the pod labels %v", d.Spec.Selector, pod)
					}
					checkService(t, r, name, pod)
					checkPod(t, d.Spec.Template.Spec, true)
					if l.production {
						checkProduction(t, r, name, d)
					}
				})
			}
			if len(r.jobs) == 0 {
				t.Errorf("no Job (want crm-db-bootstrap)")
			}
			for name, j := range r.jobs {
				t.Run("job "+name, func(t *testing.T) {
					t.Parallel()
					checkPod(t, j.Spec.Template.Spec, false)
				})
			}
		})
	}
}

func checkService(t *testing.T, r rendered, name string, pod map[string]string) {
	t.Helper()
	s, ok := r.services[name]
	if name == "render" {
		if ok {
			t.Errorf("render has a Service; it takes no traffic")
		}
		return
	}
	if !ok {
		t.Fatalf("no Service %s", name)
	}
	if !(selector{MatchLabels: s.Spec.Selector}).matches(pod) || len(s.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the pods %v", s.Spec.Selector, pod)
	}
	var targets []string
	for _, p := range s.Spec.Ports {
		targets = append(targets, fmt.Sprint(p.TargetPort))
	}
	if diff := cmp.Diff([]string{"http"}, targets); diff != "" {
		t.Errorf("Service target ports (-want +got):\n%s", diff)
	}
}

// checkPod checks the restricted security context and resources of a pod,
// and its probes when it is a long-running process.
func checkPod(t *testing.T, p podSpec, probes bool) {
	t.Helper()
	if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken is not false")
	}
	sc := p.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("no pod securityContext")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("runAsNonRoot is not true")
	case sc.RunAsUser == nil || *sc.RunAsUser == 0:
		t.Errorf("runAsUser is not a non-zero UID")
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault":
		t.Errorf("seccompProfile is not RuntimeDefault")
	}
	for _, v := range p.Volumes {
		if v.Secret != nil {
			t.Errorf("volume %s mounts secret %s; secrets come by key (secretKeyRef)", v.Name, v.Secret.SecretName)
		}
	}
	if len(p.Containers) == 0 {
		t.Fatalf("no container")
	}
	for _, c := range p.Containers {
		if probes {
			checkProbe(t, c.Name+" readiness", c.ReadinessProbe, "/readyz")
			checkProbe(t, c.Name+" liveness", c.LivenessProbe, "/healthz")
		}
		for _, res := range []string{"cpu", "memory", "ephemeral-storage"} {
			if c.Resources.Requests[res] == "" {
				t.Errorf("%s: no %s request", c.Name, res)
			}
			if c.Resources.Limits[res] == "" {
				t.Errorf("%s: no %s limit", c.Name, res)
			}
		}
		s := c.SecurityContext
		switch {
		case s == nil:
			t.Errorf("%s: no securityContext", c.Name)
		case s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation:
			t.Errorf("%s: allowPrivilegeEscalation is not false", c.Name)
		case s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem:
			t.Errorf("%s: readOnlyRootFilesystem is not true", c.Name)
		case s.Capabilities == nil || !slices.Equal(s.Capabilities.Drop, []string{"ALL"}) || len(s.Capabilities.Add) > 0:
			t.Errorf("%s: capabilities are not drop [ALL], add none", c.Name)
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				t.Errorf("%s: envFrom secret %s injects every key; use secretKeyRef", c.Name, e.SecretRef.Name)
			}
		}
	}
}

func checkProbe(t *testing.T, what string, p *probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s probe: none (want httpGet %s)", what, path)
		return
	}
	if p.HTTPGet.Path != path || fmt.Sprint(p.HTTPGet.Port) != "http" {
		t.Errorf("%s probe: %s on %v, want %s on http", what, p.HTTPGet.Path, p.HTTPGet.Port, path)
	}
}

func checkProduction(t *testing.T, r rendered, name string, d deployment) {
	t.Helper()
	if d.Spec.Replicas != nil {
		t.Errorf("replicas %d set; the autoscaler owns the count", *d.Spec.Replicas)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if i := strings.LastIndex(c.Image, ":"); i < 0 || strings.Contains(c.Image[i:], "/") || c.Image[i+1:] == "latest" {
			t.Errorf("%s: image %q has no pinned tag", c.Name, c.Image)
		}
	}
	scaled := 0
	for _, h := range r.hpas {
		if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != name {
			continue
		}
		scaled++
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
			t.Errorf("HPA minReplicas below 2: one pod is a single point of failure")
		}
		cpu := false
		for _, m := range h.Spec.Metrics {
			cpu = cpu || (m.Resource != nil && m.Resource.Name == "cpu")
		}
		if !cpu {
			t.Errorf("HPA does not scale on CPU")
		}
	}
	for _, s := range r.scaled {
		if s.Spec.ScaleTargetRef.Name != name {
			continue
		}
		scaled++
		if s.Spec.MinReplicaCount == nil || *s.Spec.MinReplicaCount < 2 {
			t.Errorf("ScaledObject minReplicaCount below 2")
		}
	}
	if scaled != 1 {
		t.Errorf("%d autoscalers (HPA or ScaledObject) target it, want 1", scaled)
	}
	budgets := 0
	for _, p := range r.pdbs {
		if p.Spec.Selector.matches(d.Spec.Template.Metadata.Labels) {
			budgets++
		}
	}
	if budgets != 1 {
		t.Errorf("%d PodDisruptionBudgets select its pods, want 1", budgets)
	}
}

// TestSecretsPerProcess: each process reads only the secret keys it uses;
// the encryption keys and the admin credentials never reach another pod.
func TestSecretsPerProcess(t *testing.T) {
	t.Parallel()
	common := []string{"crm-internal/CRM_INTERNAL_SECRET", "crm-redis/REDIS_URL?"}
	with := func(extra ...string) []string { return append(slices.Clone(common), extra...) }
	want := map[string][]string{
		"gateway":   with(),
		"identity":  with("crm-db/identity", "crm-identity/CRM_ADMIN_EMAIL?", "crm-identity/CRM_ADMIN_PASSWORD?", "crm-identity/CRM_SECRET_KEY"),
		"contacts":  with("crm-db/contacts"),
		"leads":     with("crm-db/leads"),
		"deals":     with("crm-db/deals"),
		"contracts": with("crm-db/contracts"),
		"intake":    with("crm-db/intake"),
		"mail":      with("crm-db/mail", "crm-mail/CRM_SECRET_KEY"),
		"webhooks":  with("crm-db/webhooks", "crm-webhooks/CRM_SECRET_KEY"),
		"render":    {"crm-redis/REDIS_URL?"},
	}
	for _, v := range want {
		slices.Sort(v)
	}
	for _, l := range layouts {
		t.Run(l.dir, func(t *testing.T) {
			t.Parallel()
			r := load(t, l.dir)
			got := map[string][]string{}
			for _, name := range processes {
				got[name] = []string{}
				for _, c := range r.deployments[name].Spec.Template.Spec.Containers {
					for _, e := range c.Env {
						if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
							continue
						}
						ref := e.ValueFrom.SecretKeyRef
						s := ref.Name + "/" + ref.Key
						if ref.Optional {
							s += "?"
						}
						got[name] = append(got[name], s)
					}
				}
				slices.Sort(got[name])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("secret keys per process, ? = optional (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricsPorts: Prometheus scrapes the port serving /metrics; the
// gateway's is its ops port, which its Service (and so the Ingress) lacks.
func TestMetricsPorts(t *testing.T) {
	t.Parallel()
	r := load(t, "k8s/overlays/production")
	for _, name := range processes {
		d := r.deployments[name]
		c := d.Spec.Template.Spec.Containers[0]
		ports := map[string]int{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		want := ports["http"]
		if name == "gateway" {
			want = 9080
			if ports["ops"] != 9080 {
				t.Errorf("gateway: ops port %d, want 9080", ports["ops"])
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["OPS_ADDR"] != ":9080" {
				t.Errorf("gateway: OPS_ADDR %q, want :9080", env["OPS_ADDR"])
			}
			for _, p := range r.services["gateway"].Spec.Ports {
				if fmt.Sprint(p.TargetPort) == "ops" || p.Port == 9080 {
					t.Errorf("gateway Service exposes the ops port")
				}
			}
		}
		a := d.Spec.Template.Metadata.Annotations
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != fmt.Sprint(want) {
			t.Errorf("%s: scrape annotations %v, want port %d", name, a, want)
		}
	}
}

func TestIngressReachesOnlyTheGateway(t *testing.T) {
	t.Parallel()
	r := load(t, "k8s/overlays/production")
	if len(r.ingresses) != 1 {
		t.Fatalf("%d Ingresses, want 1", len(r.ingresses))
	}
	in := r.ingresses[0]
	if len(in.Spec.TLS) == 0 {
		t.Errorf("Ingress without TLS")
	}
	for _, rule := range in.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			if b := p.Backend.Service; b.Name != "gateway" || b.Port.Name != "http" {
				t.Errorf("Ingress backend %s:%s%d, want gateway:http", b.Name, b.Port.Name, b.Port.Number)
			}
		}
	}
	if len(r.namespaces) != 1 || r.namespaces[0].Metadata.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("the overlay's namespace does not enforce the restricted Pod Security Standard")
	}
}

// TestNetworkPolicies: every process admits exactly the gateway (or
// nobody), the services whose code calls it, and Prometheus.
func TestNetworkPolicies(t *testing.T) {
	t.Parallel()
	callers := callersFromCode(t)
	want := map[string][]string{}
	for _, name := range processes {
		switch name {
		case "gateway":
			want[name] = []string{"any:http", "monitoring:ops"}
		case "render":
			want[name] = []string{"monitoring:http"}
		default:
			want[name] = []string{"monitoring:http"}
			for _, c := range callers[name] {
				want[name] = append(want[name], c+":http")
			}
		}
		slices.Sort(want[name])
	}
	// The calls the architecture documents, so that a broken scan of the
	// code cannot pass unnoticed.
	for _, edge := range []string{"leads>contacts", "leads>deals", "deals>contacts", "contracts>deals", "intake>leads", "intake>identity", "mail>contacts", "mail>leads", "gateway>identity", "contacts>identity", "gateway>webhooks", "webhooks>contacts"} {
		from, to, _ := strings.Cut(edge, ">")
		if !slices.Contains(callers[to], from) {
			t.Errorf("the code scan misses %s calling %s", from, to)
		}
	}
	for _, l := range layouts {
		t.Run(l.dir, func(t *testing.T) {
			t.Parallel()
			r := load(t, l.dir)
			got := map[string][]string{}
			for _, name := range processes {
				got[name] = admitted(r, name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("who may connect to each process (-want +got):\n%s", diff)
			}
		})
	}
}

// admitted evaluates the NetworkPolicies for the pods of one process:
// "any" for a rule without sources, "monitoring" for the monitoring
// namespace, or the name of each process whose pods a rule selects.
func admitted(r rendered, name string) []string {
	return evaluate(r, r.deployments[name].Spec.Template.Metadata.Labels, direction{
		policyType: "Ingress", rules: ingressRules, anyPeer: "any",
		port: func(port policyPort) string { return fmt.Sprint(port.Port) },
		names: func(_ string, pe peer) []string {
			switch {
			case pe.IPBlock != nil:
				return []string{"ipBlock"}
			case pe.NamespaceSelector != nil && pe.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "monitoring" && pe.PodSelector == nil:
				return []string{"monitoring"}
			case pe.NamespaceSelector != nil:
				return []string{"namespace?"}
			case pe.PodSelector != nil:
				return selected(r, pe.PodSelector)
			}
			return nil
		},
	})
}

// urlSetting matches the settings naming another process's base URL.
var urlSetting = regexp.MustCompile(`"(IDENTITY|CONTACTS|LEADS|DEALS|CONTRACTS|INTAKE|MAIL|WEBHOOKS)_URL"`)

// callersFromCode maps each service to the processes whose non-test Go code
// reads its *_URL setting; every service loading pkg/platform's settings
// calls identity (JWKS and user snapshots).
func callersFromCode(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join(deployDir, "..")
	dirs := map[string]string{"gateway": filepath.Join(root, "gateway")}
	for _, p := range processes {
		if p != "gateway" {
			dirs[p] = filepath.Join(root, "services", p)
		}
	}
	callers := map[string][]string{}
	for _, caller := range processes {
		called := map[string]bool{}
		err := filepath.WalkDir(dirs[caller], func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range urlSetting.FindAllStringSubmatch(string(b), -1) {
				called[strings.ToLower(m[1])] = true
			}
			if strings.Contains(string(b), "platform.Settings") {
				called["identity"] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for callee := range called {
			if callee != caller {
				callers[callee] = append(callers[callee], caller)
			}
		}
	}
	for _, v := range callers {
		slices.Sort(v)
	}
	return callers
}

package k8s_test

import (
	"maps"
	"slices"
)

// The fields of each kind the checks read, decoded from rendered JSON.

type selector struct {
	MatchLabels      map[string]string `json:"matchLabels"`
	MatchExpressions []struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	} `json:"matchExpressions"`
}

// matches reports whether labels satisfy s (In, NotIn, Exists,
// DoesNotExist), as the API server evaluates a label selector.
func (s selector) matches(labels map[string]string) bool {
	for k, v := range s.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	for _, e := range s.MatchExpressions {
		v, ok := labels[e.Key]
		in := false
		for _, x := range e.Values {
			in = in || (ok && x == v)
		}
		switch e.Operator {
		case "In":
			if !in {
				return false
			}
		case "NotIn":
			if in {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
}

type keyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional bool   `json:"optional"`
}

type container struct {
	Name            string `json:"name"`
	Image           string `json:"image"`
	ImagePullPolicy string `json:"imagePullPolicy"`
	Ports           []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	Env []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom *struct {
			SecretKeyRef *keyRef `json:"secretKeyRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	EnvFrom []struct {
		SecretRef    *keyRef `json:"secretRef"`
		ConfigMapRef *keyRef `json:"configMapRef"`
	} `json:"envFrom"`
	ReadinessProbe *probe `json:"readinessProbe"`
	LivenessProbe  *probe `json:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	SecurityContext *struct {
		AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
		Capabilities             *struct {
			Drop []string `json:"drop"`
			Add  []string `json:"add"`
		} `json:"capabilities"`
	} `json:"securityContext"`
}

type podSpec struct {
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken"`
	SecurityContext              *struct {
		RunAsNonRoot   *bool `json:"runAsNonRoot"`
		RunAsUser      *int  `json:"runAsUser"`
		SeccompProfile *struct {
			Type string `json:"type"`
		} `json:"seccompProfile"`
	} `json:"securityContext"`
	Containers []container `json:"containers"`
	Volumes    []struct {
		Name   string `json:"name"`
		Secret *struct {
			SecretName string `json:"secretName"`
		} `json:"secret"`
	} `json:"volumes"`
}

type deployment struct {
	Spec struct {
		Replicas *int     `json:"replicas"`
		Selector selector `json:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec podSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type job struct {
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec podSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type service struct {
	Spec struct {
		Selector map[string]string `json:"selector"`
		Ports    []struct {
			Name       string `json:"name"`
			Port       int    `json:"port"`
			TargetPort any    `json:"targetPort"`
		} `json:"ports"`
	} `json:"spec"`
}

type scaleTarget struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

type hpa struct {
	Spec struct {
		ScaleTargetRef scaleTarget `json:"scaleTargetRef"`
		MinReplicas    *int        `json:"minReplicas"`
		MaxReplicas    int         `json:"maxReplicas"`
		Metrics        []struct {
			Resource *struct {
				Name string `json:"name"`
			} `json:"resource"`
		} `json:"metrics"`
	} `json:"spec"`
}

type scaledObject struct {
	Spec struct {
		ScaleTargetRef  scaleTarget `json:"scaleTargetRef"`
		MinReplicaCount *int        `json:"minReplicaCount"`
		Triggers        []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

type pdb struct {
	Spec struct {
		Selector       selector `json:"selector"`
		MinAvailable   any      `json:"minAvailable"`
		MaxUnavailable any      `json:"maxUnavailable"`
	} `json:"spec"`
}

type peer struct {
	PodSelector       *selector `json:"podSelector"`
	NamespaceSelector *selector `json:"namespaceSelector"`
	IPBlock           *struct {
		CIDR   string   `json:"cidr"`
		Except []string `json:"except"`
	} `json:"ipBlock"`
}

type policyPort struct {
	Port     any    `json:"port"`
	Protocol string `json:"protocol"`
}

type networkPolicy struct {
	Spec struct {
		PodSelector selector `json:"podSelector"`
		PolicyTypes []string `json:"policyTypes"`
		Ingress     []struct {
			From  []peer       `json:"from"`
			Ports []policyPort `json:"ports"`
		} `json:"ingress"`
		Egress []struct {
			To    []peer       `json:"to"`
			Ports []policyPort `json:"ports"`
		} `json:"egress"`
	} `json:"spec"`
}

// policyRule is an ingress or egress rule: the peers it admits or reaches
// and on which ports.
type policyRule struct {
	peers []peer
	ports []policyPort
}

// direction is what evaluate needs of one side of a NetworkPolicy.
type direction struct {
	policyType string // "Ingress" or "Egress"
	rules      func(networkPolicy) []policyRule
	port       func(policyPort) string               // how a port is written
	names      func(policy string, pe peer) []string // what a peer of a policy selects
	anyPeer    string                                // the name of a rule without peers
}

var (
	ingressRules = func(p networkPolicy) []policyRule {
		out := make([]policyRule, len(p.Spec.Ingress))
		for i, r := range p.Spec.Ingress {
			out[i] = policyRule{r.From, r.Ports}
		}
		return out
	}
	egressRules = func(p networkPolicy) []policyRule {
		out := make([]policyRule, len(p.Spec.Egress))
		for i, r := range p.Spec.Egress {
			out[i] = policyRule{r.To, r.Ports}
		}
		return out
	}
)

// evaluate lists, for pods with labels, every "peer:port" the policies of
// direction d allow, sorted; "any:*" when no such policy selects the pods
// (they are not isolated in that direction).
func evaluate(r rendered, labels map[string]string, d direction) []string {
	isolated := false
	seen := map[string]bool{}
	for name, p := range r.policies {
		if !p.Spec.PodSelector.matches(labels) || !slices.Contains(p.Spec.PolicyTypes, d.policyType) {
			continue
		}
		isolated = true
		for _, rule := range d.rules(p) {
			ports := []string{"*"}
			if len(rule.ports) > 0 {
				ports = ports[:0]
				for _, port := range rule.ports {
					ports = append(ports, d.port(port))
				}
			}
			var names []string
			if len(rule.peers) == 0 {
				names = []string{d.anyPeer}
			}
			for _, pe := range rule.peers {
				names = append(names, d.names(name, pe)...)
			}
			for _, n := range names {
				for _, port := range ports {
					seen[n+":"+port] = true
				}
			}
		}
	}
	if !isolated {
		return []string{"any:*"}
	}
	return slices.Sorted(maps.Keys(seen))
}

// selected names the processes whose pods sel matches.
func selected(r rendered, sel *selector) []string {
	var out []string
	for _, name := range processes {
		if sel.matches(r.deployments[name].Spec.Template.Metadata.Labels) {
			out = append(out, name)
		}
	}
	return out
}

type ingress struct {
	Spec struct {
		TLS   []any `json:"tls"`
		Rules []struct {
			HTTP struct {
				Paths []struct {
					Backend struct {
						Service struct {
							Name string `json:"name"`
							Port struct {
								Name   string `json:"name"`
								Number int    `json:"number"`
							} `json:"port"`
						} `json:"service"`
					} `json:"backend"`
				} `json:"paths"`
			} `json:"http"`
		} `json:"rules"`
	} `json:"spec"`
}

// Package k8s holds no code: its tests render every kustomization under
// deploy/ with the kustomize API and check what a production cluster needs
// of each process (probes, resources, autoscaling, disruption budgets, the
// restricted security context, per-process secrets and network reachability).
// See docs/kubernetes.md.
package k8s

module github.com/opencrm/crm/deploy/k8s

go 1.26.8

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	sigs.k8s.io/kustomize/api v0.21.2 // indirect
)

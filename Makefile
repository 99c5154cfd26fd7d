# The two front-door commands are `make run` and `make test` (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Every module of the workspace (go.work); a context is built and tested alone too.
MODULES := pkg gateway $(sort $(wildcard services/*)) deploy/e2e deploy/k8s
MODULES := $(foreach m,$(MODULES),$(if $(wildcard $(m)/go.mod),$(m)))
# Binaries: gateway plus every service that has a main package.
CMDS := $(wildcard gateway/cmd/*/main.go services/*/cmd/*/main.go)
BINS := $(foreach c,$(CMDS),bin/$(notdir $(patsubst %/main.go,%,$(c))))

GO ?= go
GOTEST_FLAGS ?= -race -count=1 -timeout 12m
# Tests use the local PostgreSQL; on a machine without one but with Docker,
# pkg/testdb starts a container instead (built in only with this tag).
TEST_TAGS ?= $(shell pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || (docker info >/dev/null 2>&1 && echo testcontainers))

.PHONY: help build run test test-e2e test-scale test-short test-faults bench fuzz load lint tidy clean images images-push

# Container images: `make images` builds one per process with
# deploy/Dockerfile (gateway and context services) and deploy/render/Dockerfile,
# tagged $(IMAGE_REGISTRY)/<process>:$(IMAGE_TAG). Needs Docker with BuildKit;
# neither `make test` nor CI runs it (no Docker engine there).
IMAGE_REGISTRY ?= opencrm
# It is also the version the binaries of `make build` report (pkg/buildinfo).
IMAGE_TAG ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
DOCKER ?= docker
# process:port of every image built from deploy/Dockerfile.
IMAGE_SERVICES := gateway:8080 identity:8081 contacts:8082 leads:8083 deals:8084 contracts:8085 intake:8086 mail:8087 webhooks:8089
IMAGES := $(foreach s,$(IMAGE_SERVICES),$(firstword $(subst :, ,$(s)))) render

help:
	@echo "make run    build everything and start the whole stack (gateway on :8080)"
	@echo "make test   run every test of every module against real PostgreSQL, Redis and Chromium, but the end-to-end suite"
	@echo "make test-e2e  the end-to-end suite: the real binaries as one stack (.ci/run runs it after make test)"
	@echo "make build  build all binaries into bin/"
	@echo "make bench  run the benchmarks (see docs/benchmarks.md)"
	@echo "make test-faults  every fault-injection test, the long ones too (see docs/reliability.md)"
	@echo "make fuzz   run every fuzz target for FUZZTIME (default 2m) each"
	@echo "make load   load and soak the whole stack (see docs/reliability.md)"
	@echo "make lint   gofmt, go vet, the OpenAPI lint (Spectral, Redocly) and its generated Go and TypeScript clients compiled"
	@echo "make test-scale  two replicas of every process behind HAProxy, one of each killed under load (docs/reliability.md)"
	@echo "make test-skew  each process at the previous release beside the current code, and the previous release on the current migrations (PREV_REF=<commit> without a tag)"
	@echo "make api-compat  the public and internal APIs' breaking-change gate against api/released (make lint runs it)"
	@echo "make images build every container image (IMAGE_REGISTRY=$(IMAGE_REGISTRY) IMAGE_TAG=$(IMAGE_TAG)); needs Docker"

build:
	@mkdir -p bin
	@for c in $(patsubst %/main.go,%,$(CMDS)); do \
		echo "go build $$c"; \
		$(GO) build -trimpath -ldflags "-X github.com/opencrm/crm/pkg/buildinfo.version=$(IMAGE_TAG)" -o bin/ ./$$c || exit 1; \
	done

run: build
	@REPLICAS=$(REPLICAS) deploy/scripts/run.sh

# All packages of all modules but the end-to-end suite, in one go test
# invocation, so the scheduler overlaps compilation and tests across
# modules. The end-to-end suite (deploy/e2e: the real binaries as one
# stack) has its own target, test-e2e; .ci/run runs both.
UNIT_MODULES := $(filter-out deploy/e2e,$(MODULES))
test:
	$(GO) test $(GOTEST_FLAGS) $(if $(TEST_TAGS),-tags $(TEST_TAGS)) $(foreach m,$(UNIT_MODULES),./$(m)/...)

test-e2e:
	$(GO) test -race -count=1 -timeout 25m $(if $(TEST_TAGS),-tags $(TEST_TAGS)) ./deploy/e2e/...

# Two replicas of every process behind a local HAProxy, one of each killed
# in turn under load (deploy/e2e/scale_*_test.go, docs/reliability.md).
test-scale:
	$(GO) test -race -count=1 -timeout 20m -tags scale$(if $(TEST_TAGS),$(comma)$(TEST_TAGS)) -run 'TestScale' -v ./deploy/e2e/

# Version skew (deploy/e2e/skew_test.go, docs/releasing.md): every process
# in turn at the previous release beside the current code, and the reverse,
# then the previous release on the current migrations. The previous release
# is the newest tag v*.*.*, else PREV_REF (the v0.2.0 commit, for a clone without tags).
PREV_REF ?= b2f0e3f
test-skew:
	PREV_REF=$(PREV_REF) $(GO) test -race -count=1 -timeout 40m -tags skew$(if $(TEST_TAGS),$(comma)$(TEST_TAGS)) -run 'TestSkew' -v ./deploy/e2e/

bench:
	@deploy/scripts/bench.sh

# Every fault-injection test (deploy/e2e/fault*_test.go), the long ones
# (build tag faults) too; the short ones also run in make test.
comma := ,
test-faults:
	$(GO) test -count=1 -timeout 20m -tags faults$(if $(TEST_TAGS),$(comma)$(TEST_TAGS)) -run 'TestFault' -v ./deploy/e2e/

# Load and soak through the gateway at a fixed rate (docs/reliability.md):
# prints the per-endpoint table, writes docs/soak.svg, fails on any error
# or on a process growing more than 10 % in RSS after the warm-up.
LOAD_RATE ?= 10
LOAD_DURATION ?= 12m
LOAD_WARMUP ?= 2m
load:
	$(GO) run ./deploy/e2e/cmd/load -rate $(LOAD_RATE) -duration $(LOAD_DURATION) -warmup $(LOAD_WARMUP) -svg docs/soak.svg

# Every fuzz target for FUZZTIME each; FUZZ_SAVE=1 refreshes the committed
# corpora under each package's testdata/fuzz/.
fuzz:
	@deploy/scripts/fuzz.sh

lint:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(foreach m,$(MODULES),./$(m)/...)
	@.ci/lint-openapi
	@$(MAKE) --no-print-directory api-compat

# The breaking-change gate of the public API against the last release's
# document, api/released (docs/releasing.md).
api-compat:
	@.ci/api-compat

tidy:
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy) || exit 1; done

images:
	@command -v $(DOCKER) >/dev/null || { echo "make images needs Docker ($(DOCKER) not found)"; exit 1; }
	@set -e; for s in $(IMAGE_SERVICES); do \
		name=$${s%%:*}; port=$${s##*:}; module=services/$$name; \
		[ $$name = gateway ] && module=gateway; \
		echo "image $(IMAGE_REGISTRY)/$$name:$(IMAGE_TAG)"; \
		DOCKER_BUILDKIT=1 $(DOCKER) build -f deploy/Dockerfile --build-arg SERVICE=$$name \
			--build-arg MODULE=$$module --build-arg PORT=$$port --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE_REGISTRY)/$$name:$(IMAGE_TAG) .; \
	done
	@echo "image $(IMAGE_REGISTRY)/render:$(IMAGE_TAG)"
	@DOCKER_BUILDKIT=1 $(DOCKER) build -f deploy/render/Dockerfile --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE_REGISTRY)/render:$(IMAGE_TAG) .

images-push: images
	@set -e; for i in $(IMAGES); do $(DOCKER) push $(IMAGE_REGISTRY)/$$i:$(IMAGE_TAG); done

clean:
	rm -rf bin .run

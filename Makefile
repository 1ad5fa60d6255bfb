# flinkmaint — see README.md. `make help` lists the targets.
SHELL := /bin/bash
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
GO_PACKAGES := ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/flinkmaint (operator CLI) and bin/flinkmaint-worker
	go build -ldflags "$(LDFLAGS)" -o bin/flinkmaint ./starter
	go build -ldflags "$(LDFLAGS)" -o bin/flinkmaint-worker ./worker

.PHONY: test
test: ## build tools, start the real peers, run every test (-race), stop the peers
	scripts/test.sh

.PHONY: test-unit
test-unit: bin/helm bin/kustomize ## unit tests only: no Java, no servers, no network (-race); under 2 minutes once bin/helm and bin/kustomize are built
	scripts/test-unit.sh

.PHONY: lint
lint: bin/workflowcheck bin/staticcheck ## gofmt, go vet, staticcheck, workflowcheck
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(GO_PACKAGES)
	go vet -tags realpeers $(GO_PACKAGES)
	go vet -tags faulthooks ./worker
	bin/staticcheck $(GO_PACKAGES)
	bin/staticcheck -tags realpeers $(GO_PACKAGES)
	bin/workflowcheck ./workflows/...

bin/workflowcheck bin/staticcheck: tools/go.mod tools/go.sum
	cd tools && GOBIN=$(CURDIR)/bin go install go.temporal.io/sdk/contrib/tools/workflowcheck honnef.co/go/tools/cmd/staticcheck

bin/helm: tools/deploy/go.mod tools/deploy/go.sum
	scripts/deploy-tools.sh helm

bin/kustomize: tools/deploy/go.mod tools/deploy/go.sum
	scripts/deploy-tools.sh kustomize

.PHONY: fault-tests
fault-tests: ## every test that kills, fails over or pauses something, -count=5 with GOMAXPROCS=1 (needs sandbox/sandbox.sh up)
	scripts/fault-tests.sh 5

.PHONY: mutate
mutate: ## mutation testing of the guards between an approved plan and a deletion (unit tests; prints survivors, fails on a new one)
	scripts/mutate.sh

bin/gremlins bin/mutants: tools/go.mod tools/go.sum tools/mutants/main.go
	cd tools && GOBIN=$(CURDIR)/bin go install github.com/go-gremlins/gremlins/cmd/gremlins ./mutants

.PHONY: docs
docs: ## regenerate docs/configuration.md, docs/window-file.md, docs/cli-reference.md and the chart's values.schema.json from the code (tests check they are current)
	FLINKMAINT_UPDATE_DOCS=1 go test -count=1 -run 'TestConfigurationReferenceIsCurrent|TestWindowFileReferenceIsCurrent|TestCLIReferenceIsCurrent|TestChartValuesSchemaIsCurrent' ./internal/config ./starter ./deploy

.PHONY: fmt
fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go')

.PHONY: tidy
tidy: ## go mod tidy for every module
	go mod tidy
	cd tools && go mod tidy
	cd sandbox/kube/tools && go mod tidy
	cd tools/deploy && go mod tidy

.PHONY: temporal-cli
temporal-cli: ## build the pinned Temporal CLI into bin/ (first time ~6-7 min)
	scripts/temporal-dev.sh cli

.PHONY: promtool
promtool: ## build the pinned promtool into bin/ for the monitoring tests (first time ~5 min)
	scripts/promtool.sh

.PHONY: temporal
temporal: ## start the Temporal dev server (UI http://localhost:8233), or reuse it
	scripts/temporal-dev.sh up

.PHONY: temporal-stop
temporal-stop: ## stop the dev server and remove its files
	scripts/temporal-dev.sh down

.PHONY: worker
worker: build ## run the worker in the foreground against the dev server
	bin/flinkmaint-worker --log-format console

.PHONY: sandbox
sandbox: ## start the real peers (HDFS, Flink, kube-apiserver) and print endpoints
	sandbox/sandbox.sh up

.PHONY: sandbox-stop
sandbox-stop: ## stop the real peers
	sandbox/sandbox.sh down

.PHONY: demo
demo: ## run the main job on the embedded default Temporal
	scripts/demo.sh

.PHONY: stop
stop: ## stop the demo worker, the dev server and the sandbox
	-@if [[ -f var/demo/worker.pid ]]; then kill $$(cat var/demo/worker.pid) 2>/dev/null; rm -f var/demo/worker.pid; echo "demo worker stopped"; fi
	scripts/temporal-dev.sh down
	sandbox/sandbox.sh down

.PHONY: capture-history
capture-history: temporal-cli ## record workflow histories for the replay tests (every workflow type the real-peer tests run)
	FLINKMAINT_CAPTURE_HISTORY=$(CURDIR)/workflows/testdata/histories go test -tags realpeers -count=1 -timeout 60m ./internal/app/... ./starter/...

.PHONY: bench-storage
bench-storage: ## walk >=100k files on the sandbox HDFS beside hdfs dfs -ls -R / -count (prints figures)
	go run ./internal/storage/bench

.PHONY: bench-metadata
bench-metadata: ## _metadata parse throughput beside Flink's Java loader (prints figures)
	scripts/bench-metadata.sh

.PHONY: bench-window
bench-window: ## a window over 5000 simulated jobs: time, runs, history per run, peak RSS (prints figures)
	scripts/bench-window.sh

.PHONY: bench-savepoints
bench-savepoints: ## savepoint-all makespan, 1000 simulated jobs at concurrency 50, 2 s per savepoint, against ceil(N/C)*T
	FLINKMAINT_SCALE_CONCURRENCY=50 FLINKMAINT_SCALE_SAVEPOINT_DELAY=2s scripts/bench-window.sh 1000

.PHONY: bench-governance-fleet
bench-governance-fleet: ## governance plan over 5000 incremental jobs (1M files, 50k _metadata) on the sandbox HDFS, with 1 and 3 workers: plan time, RSS (prints figures)
	scripts/bench-governance-fleet.sh

.PHONY: bench-governance
bench-governance: ## governance in trash mode over 500k retired job dirs on the sandbox HDFS, with 1 and 3 workers: plan, items/s, RSS (prints figures)
	scripts/bench-governance.sh

# make image tags the chart's appVersion (scripts/image.sh reads it), the
# tag the chart and the kustomize base deploy; VERSION=... on the command
# line or in the environment chooses another.
IMAGE_ENV := $(if $(filter command line environment,$(origin VERSION)),VERSION=$(VERSION))

.PHONY: image
image: ## build the worker image flinkmaint-worker:<chart appVersion> as an OCI tarball in var/image/ (no Docker needed)
	$(IMAGE_ENV) scripts/image.sh

.PHONY: image-version
image-version: ## print the tag make image gives the image
	@$(IMAGE_ENV) scripts/image.sh --print-version

.PHONY: clean
clean: stop ## stop everything and remove build outputs and state
	rm -rf bin var

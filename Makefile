# labrun: the two everyday commands are `make run` and `make test`.
GO ?= go
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS := -X github.com/labrun/labrun/internal/cli.commit=$(COMMIT)

.PHONY: run test conformance race fuzz bench gate report docs probes clients build install fmt clean

## run: every experiment with its documented parameters
run:
	$(GO) run -ldflags "$(LDFLAGS)" . all

## test: the fast tier: vet, then the tests that answer at once (go test -short), two packages a
## CPU at once (their tests mostly wait on timers), under a minute warm
test:
	$(GO) vet ./...
	$(GO) test -short -p $$(( 2 * $$(nproc) )) ./...

## conformance: the second tier: the tests the fast tier skips or shortens (internal/tier lists
## them: the real libraries, namespaces, whole experiments, probes, the gate's teeth), one package
## at a time so that timing tests do not load each other; make test runs the rest
conformance:
	$(GO) test -count=1 -run '^$$' ./... >/dev/null
	list=$$($(GO) run ./internal/tier) || exit 1; echo "$$list" | { fail=0; \
		while IFS='	' read -r pkg run; do $(GO) test -count=1 -timeout 30m -run "$$run" "$$pkg" || fail=1; done; \
		exit $$fail; }

## race: the fast tier under the race detector
race:
	$(GO) test -race -short ./...

## fuzz: each fuzz target for FUZZTIME: the gRPC front's frame reader and report's reader (their
## seeds run in every tier, 2,000 random variations of them in the conformance tier)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzFrontFrames$$' -fuzztime $(FUZZTIME) ./fakesrv/grpcsrv/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./results/

## bench: client overhead against plain net/http, and the model's cost per prediction
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./client/ ./client/h2/ ./internal/model/ ./internal/fakesrv/

## gate: every experiment three times, verdicts on the medians (exit 3: only inconclusive rows)
gate:
	$(GO) run -ldflags "$(LDFLAGS)" . all --repeat 3

## report: the committed reference run (run it on an idle machine)
report:
	$(GO) run -ldflags "$(LDFLAGS)" . all --repeat 5 --warmup 1 --out results/reference

## docs: regenerate the docs' generated sections (sample tables from the reference run, defaults, serve's tables)
docs:
	$(GO) test ./internal/cli/ -run '^(TestDocsGenerated|TestServeManual)$$' -update-docs -update-serve-doc

## probes: every shipped probe (examples/probes) against the model, and docs/clients.md checked
probes:
	$(GO) test -count=1 -timeout 30m -parallel 64 -run '^(TestShippedProbes|TestShippedGRPCProbes)$$' ./probe/ -shipped

## clients: measure every shipped probe and rewrite docs/clients.md
clients:
	$(GO) test -count=1 -timeout 30m -parallel 64 -run '^(TestShippedProbes|TestShippedGRPCProbes)$$' ./probe/ -shipped -update-clients

## build: a labrun binary in the working directory
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o labrun .

install:
	$(GO) install -ldflags "$(LDFLAGS)" .

fmt:
	gofmt -w .

clean:
	rm -f labrun

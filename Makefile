# labrun: the two everyday commands are `make run` and `make test`.
GO ?= go

.PHONY: run test bench gate build fmt clean

## run: run every experiment with its documented parameters (the timing regression gate)
run:
	$(GO) run . all

## test: vet, then every test with the race detector
test:
	$(GO) vet ./...
	$(GO) test -race ./...

## bench: client overhead against plain net/http, and the model's cost per prediction
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./client/ ./model/

## gate: what CI runs: the tests, then labrun all
gate: test run

## build: a labrun binary in the working directory
build:
	$(GO) build -o labrun .

fmt:
	gofmt -w .

clean:
	rm -f labrun

# ReactiveUV: every command installs libuv1-dev first when pkg-config cannot find it.
SWIFT ?= swift
## logcast is a package of its own (its dependencies never reach the library's users).
LOGCAST := Sources/logcast

.PHONY: deps build run test sanitize bench clean

deps:
	@./scripts/ensure-deps.sh

build: deps
	$(SWIFT) build

## The main program: logcast on a demo log (see README).
run: deps
	$(SWIFT) run --package-path $(LOGCAST) logcast --listen 127.0.0.1:7070

## Every test: the library's unit, conformance, loop and IO tests, then logcast's end-to-end tests.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	$(SWIFT) build --package-path $(LOGCAST) --build-tests
	$(SWIFT) test --package-path $(LOGCAST) --skip-build

## The sanitizer lane (CI runs it after `make test`): every test of both packages built with
## --sanitize=thread (scratch .build-tsan) and with --sanitize=address (.build-asan, with
## LeakSanitizer); any report fails it, naming the sanitizer, the test and the process.
## `make sanitize SANITIZERS=thread FILTER=Subject` runs one lane on a `swift test --filter`.
## What runs where, how long it takes, and the suppressions: scripts/sanitize.sh, README.
SANITIZERS ?= thread address
FILTER ?=
sanitize: deps
	SWIFT="$(SWIFT)" ./scripts/sanitize.sh "$(SANITIZERS)" "$(FILTER)"

## Speed against OpenCombine and a closure baseline (release build, separate package).
bench: deps
	$(SWIFT) run -c release --package-path Benchmarks ruv-bench

clean:
	rm -rf .build .build-tsan .build-asan Benchmarks/.build $(LOGCAST)/.build $(LOGCAST)/.build-tsan $(LOGCAST)/.build-asan

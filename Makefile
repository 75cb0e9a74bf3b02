# ReactiveUV: every command installs libuv1-dev first when pkg-config cannot find it.
SWIFT ?= swift
## logcast is a package of its own (its dependencies never reach the library's users).
LOGCAST := Sources/logcast

.PHONY: deps build run test bench docs clean

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

## Speed against OpenCombine and a closure baseline (release build, separate package).
bench: deps
	$(SWIFT) run -c release --package-path Benchmarks ruv-bench

## The DocC documentation (.build/docs/*.doccarchive); fails on any DocC warning. Uses the
## toolchain's docc on symbol graphs from `swift package dump-symbol-graph`, not
## swift-docc-plugin, so the library's users never resolve a documentation dependency.
docs: deps
	SWIFT="$(SWIFT)" ./scripts/build-docs.sh

clean:
	rm -rf .build Benchmarks/.build $(LOGCAST)/.build

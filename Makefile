# ReactiveUV: every command installs libuv1-dev first when pkg-config cannot find it.
SWIFT ?= swift
## logcast is a package of its own (its dependencies never reach the library's users).
LOGCAST := Sources/logcast

.PHONY: deps build run test bench bench-cmo bench-allocs clean

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

## The same with every module (ReactiveUV, OpenCombine, the rows) built with
## -cross-module-optimization, in a build directory of its own. BENCH_ARGS picks rows, e.g.
## `make bench-cmo BENCH_ARGS="--rows cold,pipeline"`.
bench-cmo: deps
	$(SWIFT) run -c release --package-path Benchmarks --scratch-path Benchmarks/.build-cmo \
		-Xswiftc -cross-module-optimization ruv-bench $(BENCH_ARGS)

## Heap allocations per event of the operator rows, under a preloaded malloc counter
## (Tests/AllocationProbe/malloc_counter.c); the times of this run are not the benchmark's.
BENCH_ALLOC_ROWS ?= pipeline,cold,fanout,switch,flatten,combinelatest,zip,cl-static2,cl-static6,cl-array6,zip-static6,zip-array6,merge-array6,concat-array6,subject-churn
bench-allocs: deps
	$(SWIFT) build -c release --package-path Benchmarks --product ruv-bench
	cc -O2 -shared -fPIC -o Benchmarks/.build/libmalloccounter.so Tests/AllocationProbe/malloc_counter.c
	LD_PRELOAD=$(CURDIR)/Benchmarks/.build/libmalloccounter.so \
		$$($(SWIFT) build -c release --package-path Benchmarks --show-bin-path)/ruv-bench --runs 1 --rows $(BENCH_ALLOC_ROWS)

clean:
	rm -rf .build Benchmarks/.build Benchmarks/.build-cmo $(LOGCAST)/.build

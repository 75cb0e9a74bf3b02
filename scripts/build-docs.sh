#!/bin/sh
# Builds every product's DocC catalog and fails on any DocC warning:
# ReactiveUV, ReactiveUVTestKit, ReactiveUVTLS, ReactiveUVNATS, ReactiveUVNATSTestKit,
# ReactiveUVHTTP and ReactiveUVHTTPS.
#
# Why this way and not swift-docc-plugin: the plugin would have to be a dependency in
# Package.swift, and every package that depends on ReactiveUV would then resolve it too.
# The toolchain has all that is needed: the compiler writes each module's public symbol
# graph while it builds it (`-emit-symbol-graph`), and the toolchain's own `docc` (next to
# `swift`) converts a catalog plus those graphs into a .doccarchive.
#
# Why not `swift package dump-symbol-graph`: it extracts a graph for every module of the
# package, test modules included, but builds only the non-test ones, so on a fresh clone it
# fails with "Couldn't load module 'ReactiveUVPackageTests'" unless the tests were built
# first. Here only the documented modules are built, with the symbol-graph flags, in a
# scratch directory of their own (.build/docs/build) so the flags never invalidate the
# ordinary build in .build.
#
# `--analyze --warnings-as-errors` makes a broken link, a parameter documented under a name
# the code does not use, or an ambiguous symbol reference fail the build.
#
# Output: .build/docs/<Module>.doccarchive, transformed for static hosting, so any static
# file server shows it: `python3 -m http.server -d .build/docs/ReactiveUV.doccarchive 8000`,
# then http://localhost:8000/documentation/reactiveuv/ (README, "Documentation").
set -eu
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
SWIFTC=${SWIFTC:-swiftc}
if [ -z "${DOCC:-}" ]; then
    DOCC=$(command -v docc 2>/dev/null || true)
    if [ -z "$DOCC" ]; then
        # The toolchain ships docc beside swift (swift itself may be a symlink to swift-driver).
        DOCC="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
    fi
fi
if [ ! -x "$DOCC" ]; then
    echo "build-docs: no docc found (set DOCC=/path/to/docc); it ships with the Swift toolchain" >&2
    exit 1
fi

# In dependency order: a module's archive is built after those of the modules it links to.
MODULES="ReactiveUV ReactiveUVTestKit ReactiveUVTLS ReactiveUVNATS ReactiveUVNATSTestKit"
# ReactiveUVHTTP's catalog is written by the HTTP product's developers; built once it exists.
[ -d Sources/ReactiveUVHTTP/ReactiveUVHTTP.docc ] && MODULES="$MODULES ReactiveUVHTTP"
[ -d Sources/ReactiveUVHTTPS/ReactiveUVHTTPS.docc ] && MODULES="$MODULES ReactiveUVHTTPS"

# The documented modules each one's doc comments may link to (its dependencies in Package.swift).
depends_on() {
    case "$1" in
        ReactiveUVTestKit | ReactiveUVTLS | ReactiveUVNATS) echo ReactiveUV ;;
        ReactiveUVHTTP) echo ReactiveUV ;;
        ReactiveUVHTTPS) echo ReactiveUV ReactiveUVTLS ReactiveUVHTTP ;;
        *) echo "" ;;
    esac
}

OUT=.build/docs
GRAPHS=$(pwd)/$OUT/symbol-graphs/all
LOG=$OUT/build.log
# The graphs are kept between runs: a module the build finds up to date writes none, and
# its graph from the run that compiled it is still the right one.
mkdir -p "$OUT" "$GRAPHS"
# One build per documented module (each builds what it depends on; the later ones are
# incremental). Every Swift module compiled writes <Module>.symbols.json, and
# <Module>@<Other>.symbols.json for its extensions of another module's types.
for module in $MODULES; do
    echo "build: $module (symbol graphs)"
    if ! $SWIFT build --scratch-path "$OUT/build" --target "$module" \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$GRAPHS" \
        -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public >"$LOG" 2>&1; then
        cat "$LOG" >&2
        exit 1
    fi
done
# A graph can be missing only if its directory was removed after the module was built:
# then build the documented modules again from scratch, once.
for module in $MODULES; do
    if [ ! -e "$GRAPHS/$module.symbols.json" ]; then
        if [ -n "${BUILD_DOCS_RETRIED:-}" ]; then
            echo "build-docs: the compiler wrote no symbol graph for $module" >&2
            exit 1
        fi
        echo "build-docs: no symbol graph for $module; building the modules again" >&2
        rm -rf "$OUT/build"
        BUILD_DOCS_RETRIED=1 exec "$0" "$@"
    fi
done

# The operator index (the topics of Signal, by family file) is generated from the symbol
# graph at each build, into a copy of the catalog, so it lists every operator there is.
TOPICS_TOOL=$OUT/doc-topics
if [ ! -x "$TOPICS_TOOL" ] || [ scripts/DocTopics.swift -nt "$TOPICS_TOOL" ]; then
    $SWIFTC -O scripts/DocTopics.swift -o "$TOPICS_TOOL"
fi

for module in $MODULES; do
    graphs=$OUT/symbol-graphs/$module
    rm -rf "$graphs" "$OUT/$module.doccarchive"
    mkdir -p "$graphs"
    cp "$GRAPHS/$module.symbols.json" "$graphs/"
    # Extensions this module makes to another module's types (e.g. the test kit's
    # TestScheduler.record) are documented with it.
    for extension in "$GRAPHS/$module@"*.symbols.json; do
        [ -e "$extension" ] && cp "$extension" "$graphs/"
    done
    catalog=$OUT/catalogs/$module.docc
    rm -rf "$catalog"
    mkdir -p "$OUT/catalogs"
    cp -R "Sources/$module/$module.docc" "$catalog"
    if [ "$module" = ReactiveUV ]; then
        "$TOPICS_TOOL" "$graphs/$module.symbols.json" "$catalog/Signal.md"
    fi
    # A product's doc comments link to the products it builds on (``ReactiveUV/UVError``):
    # those links resolve against the archives built before it, which are written with the
    # link metadata that needs (docc's external link support).
    dependencies=""
    for dependency in $(depends_on "$module"); do
        dependencies="$dependencies --dependency $OUT/$dependency.doccarchive"
    done
    echo "docc: $module"
    # shellcheck disable=SC2086 # $dependencies is a list of options
    "$DOCC" convert "$catalog" \
        --additional-symbol-graph-dir "$graphs" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.reactiveuv.$module" \
        --output-path "$OUT/$module.doccarchive" \
        --transform-for-static-hosting \
        --enable-experimental-external-link-support $dependencies \
        --analyze --warnings-as-errors
done
echo "docs (0 warnings):"
for module in $MODULES; do echo "  $OUT/$module.doccarchive"; done
echo "view one: python3 -m http.server -d $OUT/ReactiveUV.doccarchive 8000, then http://localhost:8000/documentation/reactiveuv/"

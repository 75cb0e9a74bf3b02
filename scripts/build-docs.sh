#!/bin/sh
# Builds the DocC catalogs (ReactiveUV, ReactiveUVTestKit) and fails on any DocC warning.
#
# Why this way and not swift-docc-plugin: the plugin would have to be a dependency in
# Package.swift, and every package that depends on ReactiveUV would then resolve it too.
# SwiftPM and the toolchain already have all that is needed: `swift package
# dump-symbol-graph` writes each module's public symbol graph, and the toolchain's own
# `docc` (next to `swift`) converts a catalog plus those graphs into a .doccarchive.
# `--analyze --warnings-as-errors` makes a broken link, a parameter documented under a
# name the code does not use, or an ambiguous symbol reference fail the build.
#
# Output: .build/docs/ReactiveUV.doccarchive and .build/docs/ReactiveUVTestKit.doccarchive
# (open with `docc preview`, or serve with `--transform-for-static-hosting`).
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

OUT=.build/docs
LOG=$OUT/symbol-graph.log
mkdir -p "$OUT"
# Builds the modules if needed, then writes <Module>.symbols.json (and <Module>@<Other>.symbols.json
# for extensions of another module's types) into one directory, named on its last line.
if ! $SWIFT package dump-symbol-graph --minimum-access-level public >"$LOG" 2>&1; then
    cat "$LOG" >&2
    exit 1
fi
GRAPHS=$(sed -n 's/^Files written to //p' "$LOG" | tail -n 1)
if [ -z "$GRAPHS" ] || [ ! -d "$GRAPHS" ]; then
    echo "build-docs: could not find the symbol graph directory in $LOG" >&2
    exit 1
fi

# The operator index (the topics of Signal, by family file) is generated from the symbol
# graph at each build, into a copy of the catalog, so it lists every operator there is.
TOPICS_TOOL=$OUT/doc-topics
if [ ! -x "$TOPICS_TOOL" ] || [ scripts/DocTopics.swift -nt "$TOPICS_TOOL" ]; then
    $SWIFTC -O scripts/DocTopics.swift -o "$TOPICS_TOOL"
fi

for module in ReactiveUV ReactiveUVTestKit; do
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
    echo "docc: $module"
    "$DOCC" convert "$catalog" \
        --additional-symbol-graph-dir "$graphs" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.reactiveuv.$module" \
        --output-path "$OUT/$module.doccarchive" \
        --analyze --warnings-as-errors
done
echo "docs: $OUT/ReactiveUV.doccarchive $OUT/ReactiveUVTestKit.doccarchive (0 warnings)"

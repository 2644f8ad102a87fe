#!/usr/bin/env bash
# The Java client for test/e2e/fabric8-watch.test.ts: fabric8 kubernetes-client's jars, for
# test/jvm-client/FabricWatch.java to run on, as two class paths that cannot be one (each holds a
# different vertx-core):
#   main     test/jvm-client/pom.xml: the client with its Vert.x 4 and JDK HTTP client back-ends
#            (its default Vert.x 5 one excluded)
#   vertx5   test/jvm-client/pom-vertx5.xml: the client with its default dependencies, nothing
#            excluded, so its default back-end (kubernetes-httpclient-vertx-5, Vert.x 5) is there
#
#   scripts/jvm-client.sh build         resolve both class paths' jars with Maven (each cached by
#                                       version) and print their lib directories, main's first,
#                                       one a line
#   scripts/jvm-client.sh lib           print main's lib directory; exit 1 if it is not built
#   scripts/jvm-client.sh lib vertx5    print vertx5's lib directory; exit 1 if it is not built
#
# The jars go to ${NODELET_CACHE:-~/.cache/nodelet}/fabric8/<version>/lib (main) and .../lib-vertx5,
# the version being each pom's fabric8.version. A stamp beside each (lib.stamp, lib-vertx5.stamp:
# its pom's sha256) marks a finished copy: a build fills a temporary directory and renames it into
# place, so an interrupted one never counts, and a changed pom makes its copy stale. Run a program
# on them as
#   java -cp "$(scripts/jvm-client.sh lib)/*" test/jvm-client/FabricWatch.java ...
#   java -cp "$(scripts/jvm-client.sh lib vertx5)/*" test/jvm-client/FabricWatch.java ...
set -euo pipefail

LOG_NAME=jvm-client
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
CLASS_PATHS=(main vertx5)

# Sets NAME, POM, VERSION, DIR, LIB, STAMP, SUM and JARS (the jars a finished copy must hold) for
# class path $1.
use() {
  NAME=$1
  case $NAME in
    main) POM=$ROOT/test/jvm-client/pom.xml ;;
    vertx5) POM=$ROOT/test/jvm-client/pom-vertx5.xml ;;
    *) die "no class path '$NAME' (there are: ${CLASS_PATHS[*]})" ;;
  esac
  VERSION=$(sed -n 's#.*<fabric8.version>\([^<]*\)</fabric8.version>.*#\1#p' "$POM" | head -n 1)
  [ -n "$VERSION" ] || die "no <fabric8.version> in $POM"
  DIR=$NODELET_CACHE_DIR/fabric8/$VERSION
  case $NAME in
    main) LIB=$DIR/lib; JARS="kubernetes-client kubernetes-httpclient-vertx kubernetes-httpclient-jdk" ;;
    vertx5) LIB=$DIR/lib-vertx5; JARS="kubernetes-client kubernetes-httpclient-vertx-5" ;;
  esac
  STAMP=$LIB.stamp
  SUM=$(sha256sum "$POM" | awk '{print $1}')
}

# Maven 3.8 prints ANSI resets even in batch mode: output goes to stderr without them.
maven() { mvn -B -Dstyle.color=never "$@" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' >&2; }

built() { [ -d "$LIB" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$SUM" ]; }

build() {
  if built; then echo "$LIB"; return 0; fi
  command -v mvn >/dev/null 2>&1 || die "Maven is needed to resolve fabric8 $VERSION and \`mvn\` is not on PATH"
  command -v java >/dev/null 2>&1 || die "a JDK (17 or later) is needed to run the client and \`java\` is not on PATH"
  # Parallel callers: one resolves, the others wait for it.
  build_lock "$DIR"
  if built; then exec 9>&-; echo "$LIB"; return 0; fi
  local start=$SECONDS tmp="$LIB.tmp.$$" jar
  rm -rf "$LIB".tmp.* # left by an interrupted build (none runs now: we hold the lock)
  log "resolving fabric8 kubernetes-client $VERSION ($NAME class path, $(basename "$POM"))"
  if ! maven -q -f "$POM" dependency:copy-dependencies -DoutputDirectory="$tmp"; then
    rm -rf "$tmp"; die "resolving fabric8 $VERSION ($NAME) failed"
  fi
  for jar in $JARS; do
    [ -f "$tmp/$jar-$VERSION.jar" ] || { rm -rf "$tmp"; die "no $jar-$VERSION.jar among the jars $(basename "$POM") resolved"; }
  done
  rm -f "$STAMP"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  echo "$SUM" >"$STAMP.tmp.$$" && mv -f "$STAMP.tmp.$$" "$STAMP"
  exec 9>&-
  log "resolved $(find "$LIB" -name '*.jar' | wc -l) jars ($(du -sh "$LIB" | awk '{print $1}')) for $NAME in $((SECONDS - start)) s"
  echo "$LIB"
}

lib() {
  built || die "fabric8 $VERSION's $NAME class path is not resolved (or $(basename "$POM") changed since): run \`$0 build\` first"
  echo "$LIB"
}

case ${1:-} in
  build)
    [ $# -eq 1 ] || usage
    for cp in "${CLASS_PATHS[@]}"; do use "$cp"; build; done
    ;;
  lib)
    [ $# -le 2 ] || usage
    case ${2:-main} in main | vertx5) ;; *) usage ;; esac
    use "${2:-main}"; lib
    ;;
  *) usage ;;
esac

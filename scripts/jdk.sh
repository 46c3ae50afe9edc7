#!/usr/bin/env bash
# Source this file to point JAVA_HOME at a JDK 21 or newer.
# Order: $JAVA_HOME if it is 21+, then /usr/lib/jvm/temurin-25*, any other /usr/lib/jvm JDK 21+,
# then `java` on PATH if it is 21+. The machines ship JDK 17 as the default `java`, which cannot
# build this project (release 21), so we look before we trust it.

_pgjobs_java_major() { # $1 = path to a java binary; prints its feature version or nothing
  "$1" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}'
}

_pgjobs_pick_jdk() {
  local candidate major
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    major=$(_pgjobs_java_major "$JAVA_HOME/bin/java")
    if [ -n "$major" ] && [ "$major" -ge 21 ] 2>/dev/null; then echo "$JAVA_HOME"; return 0; fi
  fi
  for candidate in /usr/lib/jvm/temurin-25* /usr/lib/jvm/*; do
    [ -x "$candidate/bin/javac" ] || continue
    major=$(_pgjobs_java_major "$candidate/bin/java")
    if [ -n "$major" ] && [ "$major" -ge 21 ] 2>/dev/null; then echo "$candidate"; return 0; fi
  done
  if command -v javac >/dev/null 2>&1; then
    candidate=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
    major=$(_pgjobs_java_major "$candidate/bin/java")
    if [ -n "$major" ] && [ "$major" -ge 21 ] 2>/dev/null; then echo "$candidate"; return 0; fi
  fi
  return 1
}

if _pgjobs_jdk=$(_pgjobs_pick_jdk); then
  export JAVA_HOME="$_pgjobs_jdk"
  export PATH="$JAVA_HOME/bin:$PATH"
else
  echo "pgjobs needs a JDK 21 or newer (found none in JAVA_HOME, /usr/lib/jvm or PATH)." >&2
  echo "Install one (e.g. apt-get install openjdk-21-jdk) or set JAVA_HOME." >&2
  return 1 2>/dev/null || exit 1
fi

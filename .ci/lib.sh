# Shared setup of .ci/run (the test suite) and .ci/demo (the main job): sourced, not run.
# Java 17+ for Spark, and .venv with the exact pins of .ci/constraints.txt plus the project (editable).

log() { printf '==> %s\n' "$*" >&2; }
die() {
  local code=$1
  shift
  printf 'error: %s\n' "$*" >&2
  exit "$code"
}
is_root() { [ "$(id -u)" -eq 0 ]; }

APT_UPDATED=0
# apt-get install as root on Debian; returns non-zero (without output) where that is not possible.
apt_install() {
  is_root || return 1
  command -v apt-get >/dev/null || return 1
  if [ "$APT_UPDATED" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- Java ------------------------------------------------------------------------------------------------

java_major() {
  command -v java >/dev/null || {
    echo 0
    return
  }
  local version
  # `java -version` writes to stderr: openjdk version "17.0.15" 2025-04-15 (or "1.8.0_392" before 9).
  version=$(java -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
  case "$version" in 1.*) version=${version#1.} ;; esac
  version=${version%%[.+_-]*}
  echo "${version:-0}"
}

ensure_java() {
  local major
  major=$(java_major)
  if [ "$major" -lt 17 ] && apt_install openjdk-17-jre-headless; then
    # An older Java may still come first on PATH; point at the one just installed.
    for home in /usr/lib/jvm/java-17-openjdk-*; do
      if [ -x "$home/bin/java" ]; then
        export JAVA_HOME="$home" PATH="$home/bin:$PATH"
      fi
    done
    major=$(java_major)
  fi
  if [ "$major" -lt 17 ]; then
    die 6 "Spark needs Java 17 or newer (found: $([ "$major" -eq 0 ] && echo none || echo "$major")).
  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless
  elsewhere: install a JDK 17+ (e.g. https://adoptium.net) and put its bin/ on PATH or set JAVA_HOME."
  fi
  log "java $major"
}

# --- Python ------------------------------------------------------------------------------------------------

ensure_venv() {
  local python
  python=$(command -v python3.11 || command -v python3 || true)
  [ -n "$python" ] || die 6 "python3 (3.11+) not found"
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die 6 "Python 3.11 or newer is needed, $python is $("$python" --version 2>&1)"
  if [ ! -x .venv/bin/python ]; then
    log "creating .venv with $python"
    if ! "$python" -m venv .venv; then
      # Debian ships venv (ensurepip) separately.
      rm -rf .venv
      apt_install python3-venv || die 6 "python3 -m venv failed; install python3-venv"
      "$python" -m venv .venv
    fi
  fi
  log "pip install -c .ci/constraints.txt -e '.[dev]'"
  .venv/bin/python -m pip install -q -c "$ROOT/.ci/constraints.txt" -e '.[dev]'
}


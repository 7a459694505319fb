#!/usr/bin/env bash
# Installs the real harness CLIs the end-to-end tests drive (Claude Code, Codex, Gemini CLI,
# Copilot CLI) and ccusage, pinned, into ${BATON_HARNESS_DIR:-/var/tmp/baton-harness}.
# Idempotent: a package already at its pinned version is left alone. Prints one line saying what
# it did.
set -euo pipefail

dir="${BATON_HARNESS_DIR:-/var/tmp/baton-harness}"
packages=("@anthropic-ai/claude-code@2.1.332" "@openai/codex@0.171.0" "@google/gemini-cli@0.61.0"
    "@github/copilot@1.0.102" "ccusage@20.0.24")

# The interactive tests (Gemini's /clear) type into the real TUI through tmux, which answers the
# terminal queries a bare pseudo-terminal leaves unanswered.
if ! command -v tmux >/dev/null 2>&1; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install-harnesses: tmux is missing and apt-get is not here: install tmux" >&2
        exit 1
    fi
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    if ! log="$(DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q tmux 2>&1 ||
        { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q tmux; } 2>&1)"; then
        echo "$log" >&2
        echo "install-harnesses: apt-get install tmux failed (output above)" >&2
        exit 1
    fi
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install-harnesses: npm is missing: install Node.js (with npm) and run this again" >&2
    exit 1
fi

installed_version() {
    local manifest="$dir/node_modules/$1/package.json"
    [ -f "$manifest" ] || return 0
    sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

missing=()
for spec in "${packages[@]}"; do
    name="${spec%@*}"
    version="${spec##*@}"
    if [ "$(installed_version "$name")" != "$version" ]; then
        missing+=("$spec")
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    mkdir -p "$dir"
    # --save-exact keeps the folder's package.json pinned too, so a later plain `npm i` there
    # cannot drift to a newer build.
    if ! log="$(npm install --prefix "$dir" --save-exact --no-audit --no-fund "${missing[@]}" 2>&1)"; then
        echo "$log" >&2
        echo "install-harnesses: npm install of ${missing[*]} into $dir failed (output above)" >&2
        exit 1
    fi
fi

# The native binaries come in per-platform packages whose files npm may leave without the
# executable bit; set it on every ELF or Mach-O file in them.
for package in "$dir"/node_modules/@anthropic-ai/claude-code-* "$dir"/node_modules/@openai/codex* \
    "$dir"/node_modules/@github/copilot* "$dir"/node_modules/@ccusage/*; do
    [ -d "$package" ] || continue
    while IFS= read -r -d '' file; do
        magic="$(head -c 4 "$file" | od -An -tx1 | tr -d ' \n')"
        case "$magic" in
            7f454c46 | cffaedfe | cefaedfe) chmod +x "$file" ;;
        esac
    done < <(find "$package" -type f -size +100k -print0)
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-harnesses: installed ${missing[*]} into $dir"
else
    echo "install-harnesses: ${packages[*]} already in $dir"
fi

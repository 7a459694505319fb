#!/usr/bin/env bash
# HEALTHCHECK of the Baton image (deploy/Dockerfile). One image runs every process, so the check
# reads what the container's main process runs (/proc/1/cmdline) and probes that:
#
#   serve gateway | serve all   GET /healthz on the gateway's port answers 200
#   serve <grpc service>        the service's gRPC port accepts a TCP connection
#   anything else (migrate, tenant, eval-closer): healthy; a one-shot has nothing to serve
#
# The port comes from the same BATON_<CONTEXT>__LISTEN variable the process reads, so a
# container that listens elsewhere is probed where it listens. Kubernetes ignores HEALTHCHECK
# and uses the probes in k8s/ (gRPC health, /readyz); this is for docker and compose.
# BATON_HEALTHCHECK_CMDLINE names another cmdline file (tests).
set -euo pipefail

cmdline_file="${BATON_HEALTHCHECK_CMDLINE:-/proc/1/cmdline}"
mapfile -d '' -t argv < "$cmdline_file"
# argv[0] is the binary; look for "serve <what>" after it.
what=""
for ((i = 1; i < ${#argv[@]}; i++)); do
  if [ "${argv[i]}" = "serve" ] && [ $((i + 1)) -lt ${#argv[@]} ]; then
    what="${argv[i + 1]}"
    break
  fi
done
# The image's CMD is `serve all`; with no arguments at all the binary has nothing to serve.
[ "${#argv[@]}" -le 1 ] && what=""

port_of() {
  # "0.0.0.0:8080" or "[::]:8080" -> 8080
  local listen="$1"
  printf '%s' "${listen##*:}"
}

case "$what" in
  gateway | all)
    port="$(port_of "${BATON_GATEWAY__LISTEN:-127.0.0.1:8080}")"
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3
    read -r status_line <&3
    case "$status_line" in
      "HTTP/1.1 200"* | "HTTP/1.0 200"*) exit 0 ;;
      *) echo "gateway /healthz answered: $status_line" >&2; exit 1 ;;
    esac
    ;;
  registry | provenance | triage | closer | usage)
    variable="BATON_${what^^}__LISTEN"
    defaults=(registry:50051 provenance:50052 triage:50053 closer:50054 usage:50055)
    fallback=""
    for entry in "${defaults[@]}"; do
      [ "${entry%%:*}" = "$what" ] && fallback="127.0.0.1:${entry##*:}"
    done
    port="$(port_of "${!variable:-$fallback}")"
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    exit 0
    ;;
  *)
    exit 0
    ;;
esac

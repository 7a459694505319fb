"""Every Baton container in the rendered manifests gets every variable its program needs.

What each program reads comes from deploy/checks/settings.tsv: one line per program and
variable, with the variable's default and its old name, generated from the Rust settings
structs by a test of the `baton` crate (cli/src/settings/documented.rs), which records the
structs each program's configuration code loads and fails when the file is stale. A check that
reads that list rather than compiling the workspace runs in a second (so `make lint` can afford
it), and the list cannot drift from the code while `cargo test` runs. It fails loudly when the
list is missing or names no variable for a program, so it cannot turn into a check that passes
on nothing.

Rules (each a pure function below, unit-tested in test_checks.py):

- A key is *required* when its default points at a loopback address (127.0.0.1, localhost,
  ::1): such a default is right on a laptop and wrong in a pod, where the peer, broker or
  database is elsewhere and a listener on loopback is unreachable. The value a pod receives
  must not be loopback either. A key without a default is optional, except the service token
  (`EITHER_OR_FILE`) and the keys required only under a setting (`CONDITIONAL`).
- `BATON_DATABASE_URL` (the base URL) is needed only for a pool whose own URL is missing: a
  program that receives every `..._DATABASE_URL` override it reads never uses the base
  (`db::connect_runtime` / `connect_maintenance` use the override as-is); `migrate` uses it only
  without `BATON_MIGRATE_DATABASE_URL` (`BASE_REPLACED_BY`).
- `CONDITIONAL` is checked against the list so it cannot go stale.
- Every `BATON_*` variable set directly on a container must be one its program reads, and every
  `BATON_*` key of a ConfigMap one some program reads: a misspelt name is otherwise silently
  ignored and the default wins. An old name (still accepted, with a deprecation line in the
  log) is reported with its new one.
- The migrations Job carries the overlay's release in its name (components/release), and every
  Deployment that serves waits for the schema: an init container running `baton migrate --check`.
- Every Secret and ConfigMap key a container references exists (in prod, where the Secret is not
  in the manifests, in k8s/base/secret.example.yaml, which documents the Secret's keys).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex
import sys

import yaml

LOOPBACK = re.compile(r"(127\.0\.0\.1|localhost|\[?::1\]?)(:|/|$)")
SETTINGS = "deploy/checks/settings.tsv"
BASE_URL = "BATON_DATABASE_URL"

# Keys required only when another key has a value: key -> (setting, value).
CONDITIONAL = {"BATON_CLOSER__JUDGE_URL": ("BATON_CLOSER__JUDGE", "openai")}

# Keys required unless their file form is set (the code reads either; see
# services/kit/src/service_tokens.rs and Env::with_files).
EITHER_OR_FILE = {"BATON_SERVICE_TOKEN": "BATON_SERVICE_TOKEN_FILE"}

# Programs whose base URL is replaced by one URL alone: `migrate --check` reads each context's
# own URL but falls back to the admin URL, not to the base.
BASE_REPLACED_BY = {"migrate": ["BATON_MIGRATE_DATABASE_URL"]}


@dataclasses.dataclass(frozen=True)
class Read:
    key: str
    required: bool
    no_loopback: bool


@dataclasses.dataclass
class Spec:
    program: str
    known: set[str]
    reads: dict[str, Read]
    # Old name -> new name, for the keys this program reads.
    renamed: dict[str, str] = dataclasses.field(default_factory=dict)


def is_loopback(value: str) -> bool:
    host = value.split("@")[-1]
    host = re.sub(r"^[a-z]+://", "", host)
    return bool(LOOPBACK.match(host))


def requirement(key: str, default: str | None) -> tuple[bool, bool]:
    """(required, no_loopback) for one read, from its default."""
    if key in EITHER_OR_FILE:
        return True, True
    loopback = default is not None and is_loopback(default)
    return loopback, loopback


def parse_settings(text: str) -> dict[str, Spec]:
    """The programs of settings.tsv: `program<TAB>key<TAB>default<TAB>old name` per line."""
    specs: dict[str, Spec] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            raise ValueError(f"{SETTINGS}:{number}: expected 4 tab-separated fields")
        program, key, default, old = fields
        spec = specs.setdefault(program, Spec(program, set(), {}))
        spec.known.add(key)
        spec.reads[key] = Read(key, *requirement(key, default or None))
        if old:
            spec.renamed[old] = key
    return specs


def load_specs(root: pathlib.Path) -> dict[str, Spec]:
    specs = parse_settings((root / SETTINGS).read_text())
    for program in ("serve registry", "serve gateway", "migrate"):
        if not specs.get(program) or not specs[program].reads:
            raise ValueError(f"{SETTINGS}: no variables for {program}")
    for key, (setting, _) in CONDITIONAL.items():
        if not any(key in s.known and setting in s.known for s in specs.values()):
            raise ValueError(f"CONDITIONAL names {key}/{setting}, which no program reads")
    return specs


def program_of(container: dict) -> str | None:
    """`serve <context>` or `migrate` from a container's command line; None for other images."""
    words = list(container.get("command") or []) + list(container.get("args") or [])
    if words[:2] == ["/bin/sh", "-c"] and len(words) == 3:
        match = re.search(r"\bbaton\s+([^;&|\n]+)", words[2])
        words = shlex.split(match[1]) if match else []
    if words and words[0] in ("serve", "migrate"):
        program = " ".join(words[:2]) if words[0] == "serve" else "migrate"
        return program
    return None


def missing(spec: Spec, env: dict[str, str]) -> list[str]:
    """Problems with one container's resolved environment (key -> value)."""
    problems = []
    overrides = BASE_REPLACED_BY.get(spec.program) or [
        key
        for key in spec.reads
        if key != BASE_URL and key.endswith("DATABASE_URL") and not spec.reads[key].required
    ]
    for key, read in sorted(spec.reads.items()):
        needed = read.required
        if key in CONDITIONAL:
            setting, value = CONDITIONAL[key]
            needed = env.get(setting) == value
        if key == BASE_URL and overrides and all(env.get(k) for k in overrides):
            needed = False
        if key in EITHER_OR_FILE and env.get(EITHER_OR_FILE[key], "").strip():
            needed = False
        value = env.get(key, "")
        if needed and not value.strip():
            problems.append(f"{spec.program}: {key} is not set")
        elif value and read.no_loopback and is_loopback(value):
            problems.append(f"{spec.program}: {key} points at loopback ({value})")
    return problems


@dataclasses.dataclass
class Rendered:
    name: str
    docs: list[dict]
    secret_keys: dict[str, dict[str, str]]
    configmaps: dict[str, dict[str, str]]


def load_rendered(name: str, path: pathlib.Path, example_secret: dict) -> Rendered:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    secrets = {}
    for doc in docs + [example_secret]:
        if doc["kind"] == "Secret":
            data = dict(doc.get("stringData") or {})
            data.update({k: "<base64>" for k in (doc.get("data") or {})})
            secrets.setdefault(doc["metadata"]["name"], data)
    configmaps = {
        d["metadata"]["name"]: d.get("data") or {} for d in docs if d["kind"] == "ConfigMap"
    }
    return Rendered(name, docs, secrets, configmaps)


def pod_specs(docs: list[dict]):
    for doc in docs:
        template = (doc.get("spec") or {}).get("template")
        if doc["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet") and template:
            yield doc["kind"] + "/" + doc["metadata"]["name"], template["spec"]


def resolve_env(container: dict, rendered: Rendered, where: str, problems: list) -> tuple:
    env, direct = {}, set()
    for source in container.get("envFrom") or []:
        ref = source.get("configMapRef") or {}
        if ref and ref["name"] not in rendered.configmaps:
            problems.append(f"{where}: envFrom ConfigMap {ref['name']} does not exist")
        env.update(rendered.configmaps.get(ref.get("name"), {}))
    for item in container.get("env") or []:
        direct.add(item["name"])
        if "value" in item:
            env[item["name"]] = str(item["value"])
            continue
        source = item.get("valueFrom") or {}
        for kind, store in (("secretKeyRef", rendered.secret_keys), ("configMapKeyRef", rendered.configmaps)):
            ref = source.get(kind)
            if ref:
                values = store.get(ref["name"])
                if values is None or ref["key"] not in values:
                    problems.append(f"{where}: {item['name']} refers to {ref['name']}/{ref['key']}, which does not exist")
                else:
                    env[item["name"]] = values[ref["key"]]
        if "fieldRef" in source:
            env[item["name"]] = "<field>"
    return env, direct


def waits_for_schema(pod: dict) -> bool:
    """Whether a pod has an init container that runs `baton migrate --check`."""
    for container in pod.get("initContainers") or []:
        words = " ".join(list(container.get("command") or []) + list(container.get("args") or []))
        if re.search(r"(^|\bbaton\s+)migrate\s+--check\b", words):
            return True
    return False


def check(rendered: Rendered, specs: dict[str, Spec]) -> list[str]:
    problems: list[str] = []
    every_key = set().union(*(s.known for s in specs.values()))
    renamed = {old: new for s in specs.values() for old, new in s.renamed.items()}
    for name, data in rendered.configmaps.items():
        for key in data:
            if key in renamed:
                problems.append(f"ConfigMap/{name}: {key} is the old name of {renamed[key]}")
            elif key.startswith("BATON_") and key not in every_key:
                problems.append(f"ConfigMap/{name}: {key} is read by no program")
    for doc in rendered.docs:
        if doc["metadata"]["name"].endswith("-unreleased"):
            problems.append(f"{rendered.name}: {doc['kind']}/{doc['metadata']['name']} has no release (include components/release)")
    seen = set()
    for workload, pod in pod_specs(rendered.docs):
        serves = any((program_of(c) or "").startswith("serve") for c in pod["containers"])
        if serves and not waits_for_schema(pod):
            problems.append(f"{rendered.name} {workload}: no init container runs `baton migrate --check`")
        for container in (pod.get("initContainers") or []) + pod["containers"]:
            program = program_of(container)
            where = f"{rendered.name} {workload} container {container['name']}"
            if program is None:
                problems.append(f"{where}: not a baton command line")
                continue
            if program not in specs:
                problems.append(f"{where}: unknown program {program}")
                continue
            seen.add(program)
            env, direct = resolve_env(container, rendered, where, problems)
            problems += [f"{where}: {p}" for p in missing(specs[program], env)]
            for key in sorted(direct):
                if key in renamed:
                    problems.append(f"{where}: {key} is the old name of {renamed[key]}")
                elif key.startswith("BATON_") and key not in specs[program].known:
                    problems.append(f"{where}: {key} is not read by {program}")
    for program in specs:
        if program not in seen:
            problems.append(f"{rendered.name}: no container runs `baton {program}`")
    return problems


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1])
    specs = load_specs(root)
    example = yaml.safe_load((root / "k8s/base/secret.example.yaml").read_text())
    problems = []
    for path in argv[2:]:
        rendered = load_rendered(pathlib.Path(path).stem, pathlib.Path(path), example)
        problems += check(rendered, specs)
    for problem in problems:
        print(f"[env] {problem}", file=sys.stderr)
    counts = ", ".join(f"{p}: {sum(r.required for r in s.reads.values())}" for p, s in specs.items())
    print(f"[env] required keys per program ({counts}); {len(argv) - 2} overlays; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

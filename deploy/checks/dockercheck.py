"""deploy/Dockerfile's dependency layer matches the workspace.

The `deps` stage copies each member's Cargo.toml and writes stand-in sources before the real
tree arrives. A member missing from it fails the image build (Cargo cannot load the
workspace); a stand-in of the wrong shape (a lib.rs where the member has a main.rs, a build
script left out) makes the layer build less than the real build needs, so every code change
rebuilds dependencies. This check derives the expected lists from Cargo.toml and the tree.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib


def dockerfile_lists(text: str) -> dict[str, set[str]]:
    """Members whose manifest the Dockerfile copies, and its lib / bin / build-script stand-ins."""
    text = text.replace("\\\n", " ")
    manifests = set(re.findall(r"^COPY\s+(\S+)/Cargo\.toml\s", text, flags=re.M))
    lists = {"manifests": manifests}
    for kind in ("lib", "bin", "script"):
        match = re.search(rf"for {kind} in ([^;]+);", text)
        lists[kind] = set(match[1].split()) if match else set()
    return lists


def workspace_lists(root: pathlib.Path) -> dict[str, set[str]]:
    members = tomllib.loads((root / "Cargo.toml").read_text())["workspace"]["members"]
    return {
        "manifests": set(members),
        "lib": {m for m in members if (root / m / "src/lib.rs").exists()},
        "bin": {m for m in members if (root / m / "src/main.rs").exists()},
        "script": {m for m in members if (root / m / "build.rs").exists()},
    }


def compare(found: dict[str, set[str]], wanted: dict[str, set[str]]) -> list[str]:
    problems = []
    for kind, members in wanted.items():
        for member in sorted(members - found[kind]):
            problems.append(f"deps stage: {member} is missing from the {kind} list")
        for member in sorted(found[kind] - members):
            problems.append(f"deps stage: {member} is in the {kind} list but not in the workspace that way")
    return problems


def replay_deps_stage(root: pathlib.Path, text: str) -> list[str]:
    """Runs the deps stage's COPY lines and stand-in script in a scratch folder, then asks Cargo
    to load the workspace there (`cargo metadata --no-deps --offline`): what `cargo fetch` in
    the image would do first, without Docker."""
    stage = text.split(" AS build", 1)[0].split(" AS deps", 1)[1].replace("\\\n", " ")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = pathlib.Path(scratch)
        for line in stage.splitlines():
            copy = re.match(r"COPY\s+(?!--)(.+)$", line)
            if copy:
                *sources, dest = copy[1].split()
                for source in sources:
                    target = tmp / dest / pathlib.Path(source).name if dest.endswith("/") else tmp / dest
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(root / source, target)
        stubs = [line[4:] for line in stage.splitlines() if line.startswith("RUN set -eu;")]
        if len(stubs) != 1:
            return ["deps stage: expected one `RUN set -eu; ...` stand-in step"]
        subprocess.run(["sh", "-c", stubs[0]], cwd=tmp, check=True)
        result = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
            cwd=tmp, capture_output=True, text=True,
        )
        if result.returncode != 0:
            return [f"deps stage: Cargo cannot load the stand-in workspace: {result.stderr.strip()[-400:]}"]
    return []


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1])
    text = (root / "deploy/Dockerfile").read_text()
    problems = compare(dockerfile_lists(text), workspace_lists(root))
    problems += replay_deps_stage(root, text)
    for needed in ("HEALTHCHECK", "CARGO_PROFILE_RELEASE_STRIP=symbols", "org.opencontainers.image.revision", "--frozen"):
        if needed not in text:
            problems.append(f"deploy/Dockerfile lost {needed}")
    for problem in problems:
        print(f"[docker] {problem}", file=sys.stderr)
    print(f"[docker] dependency layer covers {len(dockerfile_lists(text)['manifests'])} members; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

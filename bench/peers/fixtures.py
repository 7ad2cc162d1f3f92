"""Write the small peer files Concord's importer is tested with, by running the real peers.

    .venv/bin/python -m bench.peers.fixtures potato|label_studio [--check-import TASKS.json]

Each peer is installed and served exactly as its bench driver does (bench/peers/potato.py,
label_studio.py: the rrgen-shaped project, four 1-5 <Rating>s / likert schemes and an ACCEPT/REJECT
choice per response); Label Studio's project also has a <TextArea> per response. Two raters sign up
and annotate every item through the peer's own HTTP API; then the peer's own output is copied to
tests/fixtures/peers/<peer>/: Potato's annotation_output folder (with its items and config), Label
Studio's JSON export (GET /api/projects/<id>/export?exportType=JSON). --check-import instead posts a
Label Studio tasks file (as `export_study --format label-studio --out TASKS.json` writes it, with
TASKS.labeling_config.xml beside it) to a fresh project's import API and prints what Label Studio stored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

import httpx

from bench.loadclient import free_port
from bench.peers import installed_version, peer_python, stop_process

FIXTURES = Path(__file__).resolve().parent.parent.parent / "tests" / "fixtures" / "peers"
ITEMS = 3
RATERS = 2


def make_potato() -> str:
    from bench.peers import potato

    python = peer_python("potato", potato.REQUIREMENTS)
    version = installed_version(python, "potato-annotation")
    with tempfile.TemporaryDirectory(prefix="fixture-potato-") as tmp:
        project_dir = Path(tmp)
        config = potato.write_project(project_dir, ITEMS)
        port = free_port()
        server = potato.start_server(python, project_dir, config, port)
        try:
            asyncio.run(_potato_raters(f"http://127.0.0.1:{port}", potato))
        finally:
            stop_process(server)
        out = FIXTURES / "potato"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        # The raters' folders as Potato wrote them; not its log, its password file or its visit counter.
        shutil.copytree(project_dir / "annotation_output", out / "annotation_output",
                        ignore=shutil.ignore_patterns("user_config.json", "potato.log", "pocket"))
        shutil.copy(project_dir / "items.jsonl", out / "items.jsonl")
        config_data = json.loads(config.read_text())
        config_data["secret_key"] = "not-the-secret-it-ran-with"
        (out / "config.yaml").write_text(json.dumps(config_data, indent=1) + "\n")
    return version


async def _potato_raters(base: str, potato) -> None:
    for i in range(RATERS):
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            await potato.sign_up(client, i)
            rng = random.Random(100 + i)
            for _ in range(ITEMS):
                page = await client.get("/annotate")
                shown = potato.INSTANCE_ID.search(page.text) if page.status_code == 200 else None
                if shown is None:
                    break
                body = {"instance_id": shown.group(1), "annotations": potato.answers(rng), "cleared_schemas": [],
                        "span_annotations": []}
                saved = await client.post("/updateinstance", json=body)
                if saved.json().get("status") != "success":
                    raise RuntimeError(f"potato refused a save: {saved.text[:200]}")
                await client.post("/annotate", json={"action": "next_instance", "instance_id": shown.group(1)},
                                  headers=potato.NAVIGATION_HEADERS)


def labeling_config(ls) -> str:
    text_areas = "".join(f'<TextArea name="notes_r{n}" toName="response_{n}" maxSubmissions="1"/>' for n in ls.RESPONSES)
    return ls.labeling_config().replace("</View>", text_areas + "\n</View>")


def make_label_studio(check_import: Path | None) -> str:
    from bench.peers import label_studio as ls

    python = peer_python("label_studio", ls.REQUIREMENTS)
    version = installed_version(python, "label-studio")
    with tempfile.TemporaryDirectory(prefix="fixture-label-studio-") as tmp, ls.fresh_database():
        port = free_port()
        server = ls.start_server(python, Path(tmp), port)
        try:
            asyncio.run(_label_studio(f"http://127.0.0.1:{port}", ls, check_import))
        finally:
            stop_process(server)
    return version


async def _label_studio(base: str, ls, check_import: Path | None) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60) as owner:
        await ls.sign_up(owner, "fixture-owner@peer.invalid")
        if check_import is not None:
            await _check_import(owner, check_import)
            return
        resp = await owner.post("/api/projects/", json={"title": "Concord fixture", "label_config": labeling_config(ls),
                                                        "maximum_annotations": RATERS})
        resp.raise_for_status()
        project = resp.json()["id"]
        (await owner.post(f"/api/projects/{project}/import", json=ls.tasks(ITEMS))).raise_for_status()
        for i in range(RATERS):
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                await ls.sign_up(client, ls.rater_email(i))
                rng = random.Random(200 + i)
                for _ in range(ITEMS):
                    task = await client.get(f"/api/projects/{project}/next")
                    if task.status_code == 404:
                        break
                    task.raise_for_status()
                    regions = ls.result(rng) + [
                        {"from_name": f"notes_r{n}", "to_name": f"response_{n}", "type": "textarea",
                         "value": {"text": [f"rater {i}: response {n} reads {rng.choice(['well', 'stiffly'])}"]},
                         "origin": "manual"} for n in ls.RESPONSES]
                    body = {"result": regions, "lead_time": 7.5, "project": str(project), "draft_id": None,
                            "parent_prediction": None, "parent_annotation": None}
                    (await client.post(f"/api/tasks/{task.json()['id']}/annotations/?project={project}",
                                       json=body)).raise_for_status()
        export = await owner.get(f"/api/projects/{project}/export", params={"exportType": "JSON"})
        export.raise_for_status()
        out = FIXTURES / "label_studio"
        out.mkdir(parents=True, exist_ok=True)
        (out / "export.json").write_text(json.dumps(export.json(), indent=1, ensure_ascii=False) + "\n")
        (out / "labeling_config.xml").write_text(labeling_config(ls) + "\n")


async def _check_import(owner: httpx.AsyncClient, path: Path) -> None:
    """Post Concord's tasks to a new project with the labeling config they name; print what was stored."""
    tasks = json.loads(path.read_text())
    config = (path.parent / f"{path.stem}.labeling_config.xml")
    label_config = config.read_text() if config.exists() else None
    resp = await owner.post("/api/projects/", json={"title": "Concord export check",
                                                    **({"label_config": label_config} if label_config else {})})
    resp.raise_for_status()
    project = resp.json()["id"]
    imported = await owner.post(f"/api/projects/{project}/import", json=tasks)
    print("import:", imported.status_code, imported.text[:400])
    imported.raise_for_status()
    listed = await owner.get("/api/tasks/", params={"project": project, "fields": "all", "page_size": 1000})
    listed.raise_for_status()
    stored = listed.json()["tasks"] if isinstance(listed.json(), dict) else listed.json()
    predictions = [p for t in stored for p in t.get("predictions") or []]
    print(json.dumps({"tasks_sent": len(tasks), "tasks_stored": len(stored),
                      "predictions_sent": sum(len(t.get("predictions", [])) for t in tasks),
                      "predictions_stored": len(predictions),
                      "regions_sent": sum(len(p["result"]) for t in tasks for p in t.get("predictions", [])),
                      "regions_stored": sum(len(p.get("result") or []) for p in predictions),
                      "model_versions_stored": sorted({p.get("model_version") for p in predictions})}))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers.fixtures")
    parser.add_argument("peer", choices=("potato", "label_studio"))
    parser.add_argument("--check-import", type=Path, help="label_studio: only import this tasks file into a fresh project")
    args = parser.parse_args(argv)
    version = make_potato() if args.peer == "potato" else make_label_studio(args.check_import)
    print(f"{args.peer} {version}: " + ("checked the import" if args.check_import else f"wrote {FIXTURES / args.peer}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

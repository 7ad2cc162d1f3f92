"""A release as a Hugging Face dataset folder, opened by `datasets.load_dataset` (offline: local files only)."""

from __future__ import annotations

import io
import os
import socket
import zipfile

import pyarrow.parquet as pq
import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before `datasets` reads its config: nothing is downloaded
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import datasets  # noqa: E402

from annotation.datasets import export_chunks  # noqa: E402
from annotation.datasets.card import size_category  # noqa: E402
from annotation.datasets.releases import ReleaseError, release_build, release_path, releases_create  # noqa: E402

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def no_network(monkeypatch):
    """Any connection `datasets` tried to open beyond this machine would fail the test."""
    connect = socket.socket.connect

    def local_only(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") and not host.startswith("/"):
            raise AssertionError(f"a connection to {address} was attempted")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)


def test_load_dataset_opens_the_release_folder(codegen_study, tmp_path, no_network):
    (release,) = [release_build(release_id=r.pk) for r in releases_create(
        study=codegen_study, version="1.2.0", formats=["hf"], license="cc-by-4.0", changelog="Second round")]
    assert release.status == "ready" and release.file_path.endswith("-1.2.0.hf.zip")
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(release_path(release)) as zf:
        assert sorted(zf.namelist()) == ["README.md", "data/ratings.parquet"]
        zf.extractall(folder)

    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))
    train = loaded["train"]
    expected = pq.read_table(folder / "data" / "ratings.parquet")
    assert train.num_rows == expected.num_rows == codegen_study.assignments.count() * 8
    assert train.features["item"].dtype == "string" and train.features["output"].dtype == "int16"
    assert train.features["score"].dtype == "float64" and train.features["ignored"].dtype == "bool"
    assert sorted(set(train["system"])) == ["m1", "m2", "m3", "m4"]

    card = (folder / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["license"] == "cc-by-4.0"
    assert meta["size_categories"] == [size_category(expected.num_rows)] == ["n<1K"]
    assert "text-generation" in meta["task_categories"]
    assert meta["configs"][0]["data_files"][0]["path"] == "data/ratings.parquet"
    if os.environ.get("CONCORD_SHOW_CARD"):
        print(card)
    assert "| Technical Quality (`technical_quality`) | likert | 1–5 |" in card
    assert "## Agreement between the raters" in card and "`technical_quality`" in card.split("## Agreement")[1]
    assert "Second round" in card and "Version 1.2.0" in card


def test_the_zip_is_the_same_bytes_for_the_same_ratings(codegen_study):
    first = b"".join(export_chunks(codegen_study, "hf", dataset_version="1.0.0", license="mit"))
    again = b"".join(export_chunks(codegen_study, "hf", dataset_version="1.0.0", license="mit"))
    assert first == again and zipfile.is_zipfile(io.BytesIO(first))


def test_a_hugging_face_release_needs_a_known_license(codegen_study):
    with pytest.raises(ReleaseError, match="license: a Hugging Face release states its license"):
        releases_create(study=codegen_study, version="1.0.0", formats=["hf", "csv"])
    with pytest.raises(ReleaseError, match="license: unknown 'wtfpl'"):
        releases_create(study=codegen_study, version="1.0.0", formats=["hf"], license="wtfpl")
    assert not codegen_study.releases.exists()  # all or nothing


@pytest.mark.parametrize("n, label", [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (2_500_000, "1M<n<10M")])
def test_size_buckets_follow_the_hub(n, label):
    assert size_category(n) == label

"""``edge models pull NAME``: download a hub model's GGUF file(s) into the models directory.

For connected devices only: a manifest entry with ``source = "hub"`` names a Hugging Face
repository (``repo``, optional ``revision``), the language model ``file`` and, for a VLM,
its projector ``mmproj``, each with the ``size`` in bytes and ``sha256`` when they were
recorded (``sha256 = "unverified"`` says none was). The download itself is
``huggingface_hub.hf_hub_download`` into ``local_dir``: it shows a progress bar, resumes a
partial download after an interruption and honours ``HF_ENDPOINT`` (a mirror) and
``HF_TOKEN``. Every file is then checked (size, GGUF magic, sha256) before it counts as
pulled; a file that fails is removed, never left under its final name.

Offline is the normal state of many devices: before touching the hub the endpoint's host is
resolved and connected to with a short timeout, so ``pull`` fails in seconds with a message
that says what to do, instead of retrying for half a minute.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from models.registry import ModelSpec
from models.resolve import GGUF_MAGIC, sha256_file

DEFAULT_ENDPOINT = "https://huggingface.co"
UNVERIFIED = "unverified"


class PullError(RuntimeError):
    """A pull that cannot proceed or whose download failed verification; the message says
    what went wrong and what the user can do."""


@dataclass(frozen=True)
class HubFile:
    """One file of a hub model: name in the repo, expected bytes and sha256 (or None)."""

    file: str
    size: int | None
    sha256: str | None


@dataclass(frozen=True)
class PulledFile:
    """The outcome for one file: where it is, its sha256, whether a recorded checksum
    verified it, and whether this pull downloaded it (False: it was already there)."""

    path: Path
    sha256: str
    verified: bool
    downloaded: bool


def hub_files(spec: ModelSpec) -> list[HubFile]:
    """The files ``pull`` fetches for ``spec``: the model file, then its ``mmproj`` if any."""
    def digest(key: str) -> str | None:
        value = spec.option(key)
        return None if not value or value == UNVERIFIED else str(value).lower()

    files = [HubFile(spec.option("file"), spec.option("size"), digest("sha256"))]
    if spec.option("mmproj"):
        files.append(HubFile(spec.option("mmproj"), spec.option("mmproj_size"),
                             digest("mmproj_sha256")))
    return files


def is_present(spec: ModelSpec, models_dir: Path) -> bool:
    """Whether every file of a hub model is in ``models_dir`` with its recorded size."""
    for f in hub_files(spec):
        p = Path(models_dir) / f.file
        if not p.exists() or (f.size is not None and p.stat().st_size != f.size):
            return False
    return True


def _offline_env() -> str | None:
    for var in ("HF_HUB_OFFLINE", "EDGE_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return var
    return None


def check_reachable(endpoint: str, timeout: float = 5.0) -> None:
    """Resolve and connect to ``endpoint``'s host within ``timeout`` seconds; raises
    :class:`PullError` saying the device looks offline when that fails."""
    u = urlparse(endpoint)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise PullError(f"model hub endpoint {endpoint!r} is not an http(s) URL (HF_ENDPOINT)")
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        with socket.create_connection((u.hostname, port), timeout=timeout):
            pass
    except OSError as e:
        reason = e.strerror or e.__class__.__name__
        raise PullError(f"cannot reach the model hub at {endpoint} ({reason}); this device "
                        "looks offline") from None


def _verify(path: Path, f: HubFile) -> tuple[str, bool]:
    actual = path.stat().st_size
    if f.size is not None and actual != f.size:
        raise PullError(f"{path.name}: {actual} bytes, the manifest expects {f.size}")
    with open(path, "rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise PullError(f"{path.name}: not a GGUF file (bad magic)")
    digest = sha256_file(path)
    if f.sha256 is not None and digest != f.sha256:
        raise PullError(f"{path.name}: sha256 {digest} does not match the manifest's {f.sha256}")
    return digest, f.sha256 is not None


def pull(spec: ModelSpec, models_dir: Path, *, endpoint: str | None = None,
         connect_timeout: float = 5.0, tqdm_class=None) -> list[PulledFile]:
    """Download ``spec``'s files into ``models_dir`` and verify them.

    Files already present and matching are not downloaded again. ``endpoint``: the hub
    (default ``HF_ENDPOINT`` or https://huggingface.co). ``tqdm_class``: the progress bar
    class (huggingface_hub's default prints to stderr). Raises :class:`PullError` when the
    model is not a hub model, the device is offline (``HF_HUB_OFFLINE``/``EDGE_OFFLINE`` set,
    or the hub unreachable within ``connect_timeout`` s), the hub refuses a file, or a file
    fails verification (it is then deleted).
    """
    if spec.source != "hub" or not spec.option("repo"):
        raise PullError(f"model {spec.name!r} is not downloaded from a model hub (source "
                        f"{spec.source!r}); install it with `{spec.install_hint}`")
    models_dir = Path(models_dir)
    files = hub_files(spec)
    where = (f"copy {', '.join(f.file for f in files)} from "
             f"https://huggingface.co/{spec.option('repo')} into {models_dir}")
    results, todo = _already_pulled(files, models_dir)
    if not todo:
        return results
    endpoint = _reachable_endpoint(spec, endpoint, connect_timeout, where)
    for f in todo:
        results.append(_download(spec, f, models_dir, endpoint, connect_timeout, tqdm_class))
    return results


def _already_pulled(files: list[HubFile],
                    models_dir: Path) -> tuple[list[PulledFile], list[HubFile]]:
    """The files already in ``models_dir`` that verify, and those still to download; a file
    of the right size that fails verification is deleted (wrong bytes under its final name)."""
    results: list[PulledFile] = []
    todo: list[HubFile] = []
    for f in files:
        path = models_dir / f.file
        if path.exists() and (f.size is None or path.stat().st_size == f.size):
            try:
                digest, ok = _verify(path, f)
                results.append(PulledFile(path, digest, ok, downloaded=False))
                continue
            except PullError:
                path.unlink()  # wrong bytes under the final name: fetch it again
        todo.append(f)
    return results, todo


def _reachable_endpoint(spec: ModelSpec, endpoint: str | None, connect_timeout: float,
                        where: str) -> str:
    """The hub endpoint to download from, once it is known to answer; raises
    :class:`PullError` saying how to get the files when the device is (or is set) offline."""
    var = _offline_env()
    if var:
        raise PullError(f"{var} is set, so nothing is downloaded. On a connected device unset "
                        f"it and run `edge models pull {spec.name}`, or {where}.")
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    try:
        check_reachable(endpoint, connect_timeout)
    except PullError as e:
        raise PullError(f"{e}. Connect it and run `edge models pull {spec.name}` again, or "
                        f"{where}.") from None
    return endpoint


def _download(spec: ModelSpec, f: HubFile, models_dir: Path, endpoint: str,
              connect_timeout: float, tqdm_class) -> PulledFile:
    """Download one file with ``hf_hub_download`` (resumable) and verify it; a file that
    fails verification is removed. Raises :class:`PullError`."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    models_dir.mkdir(parents=True, exist_ok=True)
    try:
        got = Path(hf_hub_download(
            repo_id=spec.option("repo"), filename=f.file,
            revision=spec.option("revision"), local_dir=models_dir, endpoint=endpoint,
            etag_timeout=connect_timeout, tqdm_class=tqdm_class))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as e:
        raise PullError(f"{spec.name}: downloading {f.file} from {endpoint}/"
                        f"{spec.option('repo')} failed ({e.__class__.__name__}: "
                        f"{str(e).splitlines()[0][:200]}); run the same command again "
                        "to resume") from None
    try:
        digest, ok = _verify(got, f)
    except PullError as e:
        got.unlink(missing_ok=True)
        raise PullError(f"{e}; the download was removed. Run `edge models pull "
                        f"{spec.name}` again; if it fails the same way, the file on the "
                        "hub changed and the manifest needs a new checksum.") from None
    return PulledFile(got, digest, ok, downloaded=True)


def recommended(manifest, models_dir: Path) -> list[dict]:
    """The hub models of ``manifest`` (a :class:`models.registry.Manifest`) as rows:
    name, role it suits, download size (MB, approximate), RAM needed (GB), license, whether
    it is in ``models_dir``, description."""
    rows = []
    for spec in manifest.models.values():
        if spec.source != "hub":
            continue
        rows.append({"name": spec.name, "role": spec.option("recommended", ""),
                     "backend": spec.backend, "repo": spec.option("repo"),
                     "files": [f.file for f in hub_files(spec)],
                     "download_mb": spec.option("download_mb"), "ram_gb": spec.option("ram_gb"),
                     "license": spec.license, "present": is_present(spec, models_dir),
                     "checksums": "recorded" if all(f.sha256 for f in hub_files(spec))
                     else UNVERIFIED, "description": spec.description})
    return rows

